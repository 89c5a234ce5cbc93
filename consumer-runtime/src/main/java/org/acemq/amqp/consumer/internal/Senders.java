package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.qpid.protonj2.client.DeliveryMode;
import org.apache.qpid.protonj2.client.DeliveryState;
import org.apache.qpid.protonj2.client.Sender;
import org.apache.qpid.protonj2.client.SenderOptions;
import org.apache.qpid.protonj2.client.Tracker;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.client.exceptions.ClientLinkRemotelyClosedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the messages handlers send go out: one session of the consumer's connection, one sender per address (opened
 * when first needed; at most {@link #MAX_SENDERS}, the least recently used closed first), every message sent durable
 * as the application asked and waited for until the broker settles it. Only {@code accepted} counts as sent.
 *
 * <p>Thread-safe: handler threads send at the same time; protonj2 queues their work on the connection's I/O thread.
 */
final class Senders implements Sends.Outlet {

    private static final Logger LOG = LoggerFactory.getLogger(Senders.class);
    /** The most senders kept open at once. */
    static final int MAX_SENDERS = 64;

    private final SessionHandle session;
    private final Duration timeout;
    private final Map<String, Sender> open = new LinkedHashMap<>(16, 0.75f, true);

    /** @param timeout how long to wait for a sender to open and for the broker to settle what was sent */
    Senders(SessionHandle session, Duration timeout) {
        this.session = session;
        this.timeout = timeout;
    }

    /**
     * Sends every message, then waits until the broker has settled each.
     *
     * @throws SendFailedException on the first message not accepted (the others may have been sent: they carry stable
     *     ids, so sending them again is absorbed by an idempotent receiver)
     */
    @Override
    public void sendAll(List<Outbound> messages) {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<Tracker> trackers = new ArrayList<>(messages.size());
        for (Outbound out : messages) {
            Sender sender = sender(out);
            try {
                trackers.add(sender.send(out.message()));
            } catch (ClientException | RuntimeException e) {
                forget(out.address(), sender);
                throw failed(out, "could not be sent", e);
            }
        }
        for (int i = 0; i < trackers.size(); i++) {
            Outbound out = messages.get(i);
            Tracker t = trackers.get(i);
            try {
                long left = Math.max(1, deadline - System.nanoTime());
                t.awaitSettlement(left, TimeUnit.NANOSECONDS);
            } catch (ClientException | RuntimeException e) {
                throw failed(out, "was not settled by the broker within " + timeout, e);
            }
            DeliveryState state = t.remoteState();
            if (state == null || !state.isAccepted()) {
                boolean rejected = state != null && state.isRejected();
                throw new SendFailedException("message " + out.messageId() + " to '" + out.address() + "' was "
                        + describe(state) + " by the broker", rejected, null);
            }
        }
    }

    private Sender sender(Outbound out) {
        String address = out.address();
        synchronized (open) {
            Sender s = open.get(address);
            if (s != null) {
                return s;
            }
        }
        Sender s;
        try {
            SenderOptions options = new SenderOptions().deliveryMode(DeliveryMode.AT_LEAST_ONCE)
                    .openTimeout(timeout.toMillis()).sendTimeout(timeout.toMillis())
                    .requestTimeout(timeout.toMillis());
            s = session.session().openSender(address, options);
            s.openFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw failed(out, "could not be sent (interrupted while opening a sender)", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            throw failed(out, "could not be sent: the broker refused a sender for its address", cause);
        } catch (ClientException | TimeoutException | RuntimeException e) {
            throw failed(out, "could not be sent (no sender for its address)", e);
        }
        synchronized (open) {
            Sender raced = open.putIfAbsent(address, s);
            if (raced != null) {
                s.closeAsync();
                return raced;
            }
            if (open.size() > MAX_SENDERS) {
                Iterator<Map.Entry<String, Sender>> oldest = open.entrySet().iterator();
                Sender evicted = oldest.next().getValue();
                oldest.remove();
                evicted.closeAsync();
            }
            return s;
        }
    }

    private void forget(String address, Sender sender) {
        synchronized (open) {
            open.remove(address, sender);
        }
        sender.closeAsync();
    }

    private SendFailedException failed(Outbound out, String what, Throwable cause) {
        boolean refused = cause instanceof ClientLinkRemotelyClosedException;
        if (refused) {
            synchronized (open) {
                Sender s = open.remove(out.address());
                if (s != null) {
                    s.closeAsync();
                }
            }
        }
        return new SendFailedException("message " + out.messageId() + " to '" + out.address() + "' " + what + ": "
                + Errors.describe(cause), refused, cause);
    }

    private static String describe(DeliveryState state) {
        if (state == null) {
            return "not settled";
        }
        return switch (state.getType()) {
            case REJECTED -> "rejected" + rejection(state);
            case RELEASED -> "released";
            case MODIFIED -> "modified (not delivered)";
            default -> state.getType().name().toLowerCase(java.util.Locale.ROOT);
        };
    }

    private static String rejection(DeliveryState state) {
        if (state instanceof org.apache.qpid.protonj2.client.Rejected r) {
            return r.getCondition() == null ? "" : " (" + r.getCondition() + ": " + r.getDescription() + ")";
        }
        return "";
    }

    /** Closes every sender (the consumer closes; the session goes with the connection). */
    void close() {
        synchronized (open) {
            for (Sender s : open.values()) {
                try {
                    s.closeAsync();
                } catch (RuntimeException e) {
                    LOG.debug("Closing a sender failed: {}", Errors.describe(e));
                }
            }
            open.clear();
        }
    }
}
