"""The daemon's start-up, phase by phase: the order (`plan.STARTUP`), and each phase with its inputs and outputs.

Each phase is a function taking what earlier phases made and returning what later ones need; one that
starts something registers how it stops, so shutdown mirrors start-up (`plan.RunProgress`).
"""

__all__: list[str] = []
