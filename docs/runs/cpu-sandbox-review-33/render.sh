#!/bin/sh
# render a file on a real terminal (tmux, 120x40) with cat, and print what the screen shows
f=$1; s=render$$
tmux kill-session -t $s 2>/dev/null
tmux new-session -d -s $s -x 120 -y 40 "cat '$f'; echo '[judge continues] next step: v10'; sleep 3"
sleep 1; tmux capture-pane -p $CAPFLAGS -t $s; tmux kill-session -t $s 2>/dev/null
