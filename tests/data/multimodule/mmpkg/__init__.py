from mmpkg.model import build_model  # noqa: F401
