"""Engines behind the shared HTTP front: one batching interface, several implementations."""
