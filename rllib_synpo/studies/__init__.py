"""Studies over Ray Tune experiment folders: ``rllib report``'s tables and figures, and the
paper's published numbers they are set beside. The core package never imports this one."""
