"""Tools for agents and the runtime context tool code runs in."""
