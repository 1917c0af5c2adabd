"""Not imported by the job: never shipped."""
SECRET = "stays-here"
