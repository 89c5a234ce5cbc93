package org.acemq.amqp.samples;

import java.io.PrintStream;

/**
 * A live progress line. On a terminal it is rewritten in place (carriage return) at most four times a second and
 * cut to 79 columns;
 * otherwise (output piped or captured) a plain line is printed at most once a second. Not thread-safe: one thread
 * drives it.
 */
final class Progress {

    private static final long TTY_INTERVAL_NANOS = 250_000_000L;
    private static final long PLAIN_INTERVAL_NANOS = 1_000_000_000L;
    private static final int MAX_WIDTH = 79;

    private final PrintStream out;
    private final boolean tty;
    private long lastPrintNanos;
    private int lastLength;
    private boolean pending;

    Progress(PrintStream out, boolean tty) {
        this.out = out;
        this.tty = tty;
    }

    /**
     * Shows the line if enough time has passed since the last one (or {@code force}).
     *
     * @param line the text
     * @param force print even if the last line was printed a moment ago
     */
    void show(String line, boolean force) {
        long now = System.nanoTime();
        long interval = tty ? TTY_INTERVAL_NANOS : PLAIN_INTERVAL_NANOS;
        if (!force && lastPrintNanos != 0 && now - lastPrintNanos < interval) {
            return;
        }
        lastPrintNanos = now;
        if (tty) {
            // stay within one 80-column row (a wrapped line cannot be redrawn), and leave the cursor at column 0
            // so that a log line printed meanwhile overwrites the progress instead of being glued to its end
            String shown = line.length() > MAX_WIDTH ? line.substring(0, MAX_WIDTH) : line;
            int pad = Math.max(0, lastLength - shown.length());
            out.print("\r" + shown + " ".repeat(pad) + "\r");
            lastLength = shown.length();
            pending = true;
        } else {
            out.println(line);
        }
        out.flush();
    }

    /** Ends the in-place line so that what follows starts on a fresh line. */
    void finish() {
        if (tty && pending) {
            out.println();
            out.flush();
        }
        pending = false;
        lastLength = 0;
        lastPrintNanos = 0;
    }
}
