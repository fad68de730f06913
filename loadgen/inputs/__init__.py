"""Input readers: request traces and their formats, conversation traces, ShareGPT datasets and
their images, and line-by-line file reading. Below `scenario`, which validates with them."""
