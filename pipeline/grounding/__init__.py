"""grounding: what a design says of the code, and whether it still holds"""
