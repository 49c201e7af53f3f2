"""The pipeline's JSON Lines format, version 1: pydantic models (the contract), the line parser that
turns their errors into line- and field-named messages, and the JSON Schema generated from them."""
