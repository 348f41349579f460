"""The parser's syntax tree (TVM's ``doc_core``): TVM mirrors Python's ``ast`` classes under the
same names; minitvm's parser reads Python's ``ast`` directly, so these are its classes."""

from ast import *  # noqa: F403 - the whole of Python's syntax tree, under its own names
