import fcntl, struct, termios, time
from inside_common import *
pts = sys.argv[1]
fd = t(f"open({pts}, O_RDONLY|O_NOCTTY)", lambda: os.open(pts, os.O_RDONLY | os.O_NOCTTY))
t(f"open({pts}, O_WRONLY)", lambda: os.open(pts, os.O_WRONLY | os.O_NOCTTY))
t("TIOCSWINSZ 1x1 (SIGWINCH to the terminal's foreground group)", lambda: fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 1, 1, 0, 0)))
def noecho():
    a = termios.tcgetattr(fd); a[3] &= ~(termios.ECHO | termios.ICANON); termios.tcsetattr(fd, termios.TCSANOW, a)
t("TCSETS (ECHO and ICANON off)", noecho)
import select
select.select([fd], [], [], 8)  # the user types now
t("read() the user's keystrokes", lambda: os.read(fd, 100))
t("TIOCEXCL (no one else may open it)", lambda: fcntl.ioctl(fd, termios.TIOCEXCL))
t("TCXONC TCOOFF (the terminal's output stopped)", lambda: termios.tcflow(fd, termios.TCOOFF))
time.sleep(3)
t("TIOCSETD N_NULL (27)", lambda: fcntl.ioctl(fd, termios.TIOCSETD, struct.pack("i", 27)))
