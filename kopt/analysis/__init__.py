"""What the measurements mean: the cited hardware registry and ceilings, roofline arithmetic, the
bottleneck class and the next directions. Pure.
"""
