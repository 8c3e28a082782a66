"""Short nardy (backgammon without the cube, RULES.md §8-9): the pure rules, no I/O."""
