"""The LogSoftmaxGrad test farm. Ships to hosts with the agent: keep it free of imports."""

__version__ = "0.2.0"
