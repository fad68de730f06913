"""Stand-ins for what cannot run here (each module says why)."""
