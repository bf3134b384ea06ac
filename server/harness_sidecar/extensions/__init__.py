"""Extensions are code: found and hashed as data by the sidecar, run only in a host process.
"""
