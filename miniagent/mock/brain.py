"""PLACEHOLDER: being written by the brain helper. respond(body) -> partial message."""


def respond(body: dict) -> dict:
    return {"content": [{"type": "text", "text": "(offline mock) placeholder answer."}], "stop_reason": "end_turn", "stop_sequence": None}
