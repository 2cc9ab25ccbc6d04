"""The target workspace (target.yaml, ref.py, kernels/vN.*): loading and validation against the
schemas, the settings files, the commands kopt prints, and provenance hashes. Pure: no torch,
cheap enough for the Snakefile to call at parse time.
"""
