"""sectorflow-echo: a test plugin. ``Taskflow("echo")`` echoes text with a tiny random-weight Paddle classifier.

It exists to test the plugin system end to end (entry point, model bundle, predictor, install and uninstall); its
labels mean nothing.
"""

__version__ = "0.1.0"
