package org.acemq.amqp.reliability;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/** Every fault the harness can inject; each can be switched on or off. */
enum FaultKind {
    /** Consumer halts right after the store claimed a chosen message (store wrapper). */
    CRASH_AFTER_CLAIM(CrashPoint.AFTER_CLAIM),
    /** Consumer halts inside the handler of a chosen message (after its effect, or before its commit). */
    CRASH_MID_HANDLER(CrashPoint.MID_HANDLER),
    /** Consumer halts right after the store confirmed a chosen message, before the settle. */
    CRASH_AFTER_CONFIRM(CrashPoint.AFTER_CONFIRM),
    /** Consumer halts right after a chosen message was settled accepted. */
    CRASH_AFTER_SETTLE(CrashPoint.AFTER_SETTLE),
    /** A consumer SIGSTOPs itself inside the handler of a chosen message; SIGCONT after twice the lease. */
    PAUSE_MID_HANDLER(CrashPoint.PAUSE_MID_HANDLER),
    /** SIGKILL of a random consumer process at a random moment (Process.destroyForcibly). */
    KILL9(null),
    /** SIGSTOP of a consumer for longer than the lease (and the broker's idle timeout), then SIGCONT. */
    PAUSE(null),
    /** The broker closes every client socket (no AMQP close). */
    BROKER_DROP(null),
    /** The broker stops and starts again on the same port with its persistent journal. */
    BROKER_RESTART(null),
    /** The database (PostgreSQL, or MariaDB with --database mariadb) stops and starts again, same data and port. */
    PG_RESTART(null),
    /** The database is unreachable for consumers for a while (the proxy closes and refuses connections). */
    PG_UNREACHABLE(null);

    final CrashPoint crashPoint;

    FaultKind(CrashPoint crashPoint) {
        this.crashPoint = crashPoint;
    }

    boolean timed() {
        return crashPoint == null;
    }

    String label() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** @param spec "all", "none", or a comma-separated list of labels such as "kill9,pg-restart" */
    static Set<FaultKind> parse(String spec) {
        String s = spec.trim().toLowerCase(Locale.ROOT);
        if (s.equals("all")) {
            return EnumSet.allOf(FaultKind.class);
        }
        Set<FaultKind> set = EnumSet.noneOf(FaultKind.class);
        if (s.equals("none") || s.isEmpty()) {
            return set;
        }
        for (String item : s.split(",")) {
            set.add(valueOf(item.trim().toUpperCase(Locale.ROOT).replace('-', '_')));
        }
        return set;
    }
}
