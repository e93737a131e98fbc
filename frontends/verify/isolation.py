"""How a measured program runs apart from the rest of the machine.

Each run gets its own session and its own scheduler autogroup at the highest
priority the autogroup allows (nice -19 when qpn may set it; silently the default
otherwise), so the shell that started qpn and other sessions' jobs share the CPU with
it as whole groups rather than thread by thread.  The shell ``exec``s the program, so
the pid is the program's.

>>> ISOLATE[:3], PIDFILE[-1]
(['setsid', 'sh', '-c'], 'echo $$ > "$0"; echo -19 > /proc/self/autogroup 2>/dev/null; exec "$@"')
"""
from __future__ import annotations

#: the prefix of a measured program's argv
ISOLATE = ["setsid", "sh", "-c", 'echo -19 > /proc/self/autogroup 2>/dev/null; exec "$@"', "sh"]
#: ISOLATE that also writes the server's pid (the shell execs it: same pid) to $0
PIDFILE = ["setsid", "sh", "-c",
           'echo $$ > "$0"; echo -19 > /proc/self/autogroup 2>/dev/null; exec "$@"']
