package org.acemq.amqp.reliability;

import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Set;

import javax.sql.DataSource;

import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.LeasedIdempotencyStore;

/**
 * Delegates to the real store and injects crashes without any hook in the runtime: halts the process right after
 * {@code acquire} returned CLAIMED, or right after {@code confirm} returned, for the chosen message keys. Records
 * every confirm and its answer in {@code harness_confirms}, and remembers on the worker thread which key it is
 * working on (the runtime runs acquire, handler, confirm and settle of one delivery on one worker thread), so that
 * the observer can tell which message it is told about.
 *
 * <p>This is not the published {@code org.acemq.amqp.consumer.testing.FaultInjectingStore} (exceptions a test chooses,
 * inside one JVM): the harness needs the process itself to die or stop at an exact point of one key's path, once
 * across all consumer processes (the harness database decides which crash fires), and a durable record of every
 * confirm for its verdict; store faults it gets from the real database, not from a wrapper.
 */
final class CrashPointStore implements LeasedIdempotencyStore {

    private final LeasedIdempotencyStore delegate;
    private final DataSource harnessDb;
    private final String consumerId;
    private final Map<CrashPoint, Set<String>> crashes;

    CrashPointStore(LeasedIdempotencyStore delegate, DataSource harnessDb, String consumerId,
            Map<CrashPoint, Set<String>> crashes) {
        this.delegate = delegate;
        this.harnessDb = harnessDb;
        this.consumerId = consumerId;
        this.crashes = crashes;
    }

    /** Halts the process if {@code point} is armed for {@code key} and has not fired before (anywhere). */
    static void maybeCrash(Map<CrashPoint, Set<String>> crashes, DataSource db, CrashPoint point, String key,
            String consumerId) {
        if (key == null || !crashes.getOrDefault(point, Set.of()).contains(key)) {
            return;
        }
        boolean first;
        try {
            first = HarnessDb.recordCrash(db, key, point.label(), consumerId);
        } catch (SQLException e) {
            System.err.println("HARNESS " + point.label() + " on " + key + ": cannot check or record it, not firing: "
                    + e);
            return;
        }
        if (first && point == CrashPoint.PAUSE_MID_HANDLER) {
            System.err.println("HARNESS pausing (SIGSTOP to myself) at " + point.label() + " on " + key);
            System.err.flush();
            try {
                new ProcessBuilder("kill", "-STOP", String.valueOf(ProcessHandle.current().pid())).start().waitFor();
            } catch (java.io.IOException e) {
                System.err.println("HARNESS could not pause: " + e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            System.err.println("HARNESS resumed after " + point.label() + " on " + key);
        } else if (first && point == CrashPoint.AFTER_COMMIT) {
            System.err.println("HARNESS SIGKILL to myself at " + point.label() + " on " + key);
            System.err.flush();
            try {
                new ProcessBuilder("kill", "-KILL", String.valueOf(ProcessHandle.current().pid())).start().waitFor();
            } catch (java.io.IOException e) {
                System.err.println("HARNESS could not send SIGKILL, halting: " + e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            Runtime.getRuntime().halt(137); // reached only if the signal could not be sent
        } else if (first) {
            System.err.println("HARNESS crashing at " + point.label() + " on " + key);
            System.err.flush();
            Runtime.getRuntime().halt(137);
        }
    }

    @Override
    public Claim acquire(String messageId) {
        Claim claim = delegate.acquire(messageId);
        if (claim.claimed()) {
            maybeCrash(crashes, harnessDb, CrashPoint.AFTER_CLAIM, messageId, consumerId);
        }
        return claim;
    }

    @Override
    public boolean confirm(Claim claim) {
        boolean held = delegate.confirm(claim);
        // the record must not be lost to a short database outage: retry for a while (blocks this worker only)
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (true) {
            try {
                HarnessDb.recordConfirm(harnessDb, claim.messageId(), claim.attempt(), consumerId, held);
                break;
            } catch (SQLException e) {
                if (System.nanoTime() > deadline) {
                    System.err.println("HARNESS could not record confirm of " + claim.messageId() + ": " + e);
                    break;
                }
                sleep(200);
            }
        }
        maybeCrash(crashes, harnessDb, CrashPoint.AFTER_CONFIRM, claim.messageId(), consumerId);
        return held;
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public boolean renew(Claim claim) {
        return delegate.renew(claim);
    }

    @Override
    public boolean release(Claim claim) {
        return delegate.release(claim);
    }

    @Override
    public int attempts(String messageId) {
        return delegate.attempts(messageId);
    }

    @Override
    public Duration leaseDuration() {
        return delegate.leaseDuration();
    }

    @Override
    public Duration retention() {
        return delegate.retention();
    }

    @Override
    public boolean claim(String messageId) {
        return delegate.claim(messageId);
    }

    @Override
    public ClaimResult tryClaim(String messageId) {
        return delegate.tryClaim(messageId);
    }

    @Override
    public void confirm(String messageId) {
        delegate.confirm(messageId);
    }

    @Override
    public void release(String messageId) {
        delegate.release(messageId);
    }

    @Override
    public boolean isConfirmed(String messageId) {
        return delegate.isConfirmed(messageId);
    }
}
