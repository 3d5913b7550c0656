import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while the libraries load (seconds: torch): nothing has run, nothing was written
    print("error: interrupted while starting; nothing was run or changed.", file=sys.stderr)
    sys.exit(1)

sys.exit(main())
