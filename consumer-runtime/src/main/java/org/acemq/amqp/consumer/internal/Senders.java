package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.acemq.amqp.consumer.SendPath;
import org.acemq.amqp.consumer.SendResult;
import org.acemq.amqp.consumer.Ticker;
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
 * as the application asked and waited for until the broker settles it. Only {@code accepted} counts as sent. Each
 * message's fate is reported to the observer ({@link org.acemq.amqp.consumer.ConsumerObserver#sent}).
 *
 * <p>Thread-safe: handler threads and the outbox sweep send at the same time; protonj2 queues their work on the
 * connection's I/O thread.
 */
final class Senders implements Outlet {

    private static final Logger LOG = LoggerFactory.getLogger(Senders.class);
    /** The most senders kept open at once. */
    static final int MAX_SENDERS = 64;

    private final SessionHandle session;
    private final Duration timeout;
    private final SafeObserver observer;
    private final Ticker ticker;
    private final Map<String, Sender> open = new LinkedHashMap<>(16, 0.75f, true);

    /**
     * @param timeout how long to wait for a sender to open and for the broker to settle what was sent
     * @param observer hears each message's fate
     * @param ticker times it for the observer
     */
    Senders(SessionHandle session, Duration timeout, SafeObserver observer, Ticker ticker) {
        this.session = session;
        this.timeout = timeout;
        this.observer = observer;
        this.ticker = ticker;
    }

    /**
     * Sends every message it can, then waits until the broker has settled each, all within {@code timeout}. A sender
     * the broker refuses for an address fails every message to that address in the call without asking again.
     *
     * @return per message, in order: null if the broker accepted it, else why not (a message not accepted may still
     *     have reached the broker: it carries a stable id, so sending it again is absorbed by an idempotent receiver)
     */
    @Override
    public List<SendFailedException> send(List<Outbound> messages, SendPath path) {
        long started = observer.active() ? ticker.read() : 0;
        long deadline = System.nanoTime() + timeout.toNanos();
        SendFailedException[] failures = new SendFailedException[messages.size()];
        Tracker[] trackers = new Tracker[messages.size()];
        Map<String, SendFailedException> refusedAddresses = null;
        for (int i = 0; i < messages.size(); i++) {
            Outbound out = messages.get(i);
            SendFailedException refused = refusedAddresses == null ? null : refusedAddresses.get(out.address());
            try {
                if (refused != null) {
                    throw failed(out, "could not be sent: the broker refused a sender for its address",
                            refused.getCause());
                }
                if (System.nanoTime() - deadline >= 0) {
                    throw new SendFailedException("message " + out.messageId() + " to '" + out.address() + "' was not "
                            + "sent: the messages sent with it took the whole " + timeout, false, null);
                }
                Sender sender = sender(out, deadline);
                try {
                    trackers[i] = sender.send(out.message());
                } catch (ClientException | RuntimeException e) {
                    forget(out.address(), sender);
                    throw failed(out, "could not be sent", e);
                }
            } catch (SendFailedException e) {
                failures[i] = e;
                if (e.refused()) {
                    if (refusedAddresses == null) {
                        refusedAddresses = new HashMap<>();
                    }
                    refusedAddresses.putIfAbsent(out.address(), e);
                }
                report(path, e.result(), started);
            }
        }
        for (int i = 0; i < trackers.length; i++) {
            Tracker t = trackers[i];
            if (t == null) {
                continue;
            }
            Outbound out = messages.get(i);
            try {
                long left = Math.max(1, deadline - System.nanoTime());
                t.awaitSettlement(left, TimeUnit.NANOSECONDS);
                DeliveryState state = t.remoteState();
                if (state == null || !state.isAccepted()) {
                    throw new SendFailedException("message " + out.messageId() + " to '" + out.address() + "' was "
                            + describe(state) + " by the broker", state != null && state.isRejected(), null);
                }
                report(path, SendResult.ACCEPTED, started);
            } catch (ClientException | RuntimeException e) {
                SendFailedException f = e instanceof SendFailedException sf ? sf
                        : failed(out, "was not settled by the broker within " + timeout, e);
                failures[i] = f;
                report(path, f.result(), started);
            }
        }
        return Arrays.asList(failures);
    }

    private void report(SendPath path, SendResult result, long started) {
        if (observer.active()) {
            observer.sent(path, result, ticker.read() - started);
        }
    }

    /** @return the open sender of the message's address, opened now (waiting at most until the deadline) if none */
    private Sender sender(Outbound out, long deadline) {
        String address = out.address();
        synchronized (open) {
            Sender s = open.get(address);
            if (s != null) {
                return s;
            }
        }
        Sender s = null;
        try {
            SenderOptions options = new SenderOptions().deliveryMode(DeliveryMode.AT_LEAST_ONCE)
                    .openTimeout(timeout.toMillis()).sendTimeout(timeout.toMillis())
                    .requestTimeout(timeout.toMillis());
            s = session.session().openSender(address, options);
            s.openFuture().get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closeQuietly(s);
            throw failed(out, "could not be sent (interrupted while opening a sender)", e);
        } catch (ExecutionException e) {
            closeQuietly(s);
            Throwable cause = e.getCause() == null ? e : e.getCause();
            throw failed(out, "could not be sent: the broker refused a sender for its address", cause);
        } catch (ClientException | TimeoutException | RuntimeException e) {
            closeQuietly(s);
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

    private static void closeQuietly(Sender s) {
        if (s != null) {
            try {
                s.closeAsync();
            } catch (RuntimeException e) {
                LOG.debug("Closing a sender that did not open failed: {}", Errors.describe(e));
            }
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
