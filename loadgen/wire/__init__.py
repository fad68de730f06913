"""The wire APIs: how one planned request goes over the wire and how its answer is read.

Each API is one module behind one small interface (loadgen.wire.apis.WireApi): it builds the
request's path and body from a Call (what the request asks, in the tool's own terms), reads the
answer, streamed or whole, into the tool's own account of it (loadgen.wire.answer.StreamResult),
and says which metrics apply. The Locust user (loadgen.traffic.users) knows no API by name.
"""
