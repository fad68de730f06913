"""Grafana: push the dashboard (`loadtest dashboards push`) and annotate runs as they happen.

Both talk to Grafana's HTTP API through grafana-client. Import the submodules where they are
needed: grafana-client (and its HTTP stack) is loaded only by a run or command that uses Grafana.
"""
