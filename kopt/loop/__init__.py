"""The optimisation loop: the decision fold (pure), the state it leaves, the GPU gate, and the
experience log.
"""
