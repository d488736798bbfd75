"""nablafol: differentiable first-order logic (∇-FOL) for visual question answering."""
