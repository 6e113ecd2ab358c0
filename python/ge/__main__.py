"""`python -m ge`: prints the package and library versions (the real tool is the `ge` binary)."""

import sys


def main(argv=None):
    import ge
    print("ge %s (library %s at %s)" % (ge.__version__, ge.version(), ge.library_path))
    print("the command-line tool is the `ge` executable: ge run|compile|inspect|bench|profile|dot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
