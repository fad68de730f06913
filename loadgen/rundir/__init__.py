"""The run folder: its layout and metadata (`folder`), and writing to disk safely (`disk`).

The ground every other package stands on: it imports nothing from the rest of `loadgen`.
"""
