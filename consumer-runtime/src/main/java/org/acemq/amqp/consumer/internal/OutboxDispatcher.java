package org.acemq.amqp.consumer.internal;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutboxStore;
import org.acemq.amqp.consumer.SendPath;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends entries of the store's outbox and answers for those the broker does not take: each stays pending, its failure
 * is recorded in the store ({@link OutboxStore#outboxFailed}) and in the consumer's health, and it is logged, once per
 * call and address: as an error when the broker refused it (naming the message-ids, the address and the broker's
 * condition: it will not pass by itself), as a warning when it may pass (the broker released it, did not answer, the
 * connection was lost). Nothing is ever dropped: marking the accepted ones dispatched is the caller's.
 *
 * <p>Used by the send stage (after a handler's transaction committed, and for a copy of a message whose outbox was left
 * pending) and by the outbox sweep. Thread-safe.
 */
final class OutboxDispatcher {

    private static final Logger LOG = LoggerFactory.getLogger(OutboxDispatcher.class);
    /** The most message-ids one log line names. */
    static final int IDS_PER_LINE = 5;

    private final OutboxStore store;
    private final Outlet outlet;
    private final OutboxState state;

    /**
     * @param store the store's outbox; null if the store keeps none (failures are then not recorded in it)
     * @param outlet where messages go out
     * @param state the consumer's view of the outbox, or null (failures are then only logged and recorded)
     */
    OutboxDispatcher(OutboxStore store, Outlet outlet, OutboxState state) {
        this.store = store;
        this.outlet = outlet;
        this.state = state;
    }

    /**
     * Sends the entries and waits for the broker's answer to each.
     *
     * @param entries outbox entries, in the order to send them
     * @param messages their messages, ready to send, in the same order; null to decode them from the entries
     * @param path how they are sent (for the observer)
     * @param who whose dispatch it is, for log lines (for example {@code Subscription 'orders'})
     * @return the entries the broker accepted, in order (the others stay pending)
     */
    List<OutboxEntry> dispatch(List<OutboxEntry> entries, List<Outbound> messages, SendPath path, String who) {
        List<OutboxEntry> sendable = entries;
        List<Outbound> outbound = messages;
        if (outbound == null) {
            sendable = new ArrayList<>(entries.size());
            outbound = new ArrayList<>(entries.size());
            for (OutboxEntry e : entries) {
                try {
                    outbound.add(Outbound.of(e));
                    sendable.add(e);
                } catch (IllegalArgumentException bad) {
                    String error = "message " + LogSafe.id(e.messageId()) + " to '" + LogSafe.id(e.address())
                            + "' cannot be sent: " + bad.getMessage();
                    LOG.error("{}: {}; it stays in the outbox, pending (remove it from the outbox table once it is "
                            + "dealt with)", who, LogSafe.text(error));
                    record(e, error, who);
                }
            }
        }
        if (outbound.isEmpty()) {
            return List.of();
        }
        List<SendFailedException> results = outlet.send(outbound, path);
        List<OutboxEntry> accepted = new ArrayList<>(sendable.size());
        Map<String, List<Integer>> refused = null;
        List<Integer> failed = null;
        for (int i = 0; i < sendable.size(); i++) {
            SendFailedException f = results.get(i);
            if (f == null) {
                accepted.add(sendable.get(i));
                continue;
            }
            record(sendable.get(i), f.getMessage(), who);
            if (f.refused()) {
                if (refused == null) {
                    refused = new LinkedHashMap<>();
                }
                refused.computeIfAbsent(sendable.get(i).address(), a -> new ArrayList<>()).add(i);
            } else {
                if (failed == null) {
                    failed = new ArrayList<>();
                }
                failed.add(i);
            }
        }
        if (refused != null) {
            for (List<Integer> sameAddress : refused.values()) {
                LOG.error("{}: {}{}; {} in the outbox, pending, and the sweep tries again later: fix what the "
                        + "broker's answer names (create the address, allow the consumer to send to it, make room on "
                        + "it), or remove {} from the outbox table", who,
                        LogSafe.text(results.get(sameAddress.get(0)).getMessage()),
                        more(sameAddress, sendable, "to the same address"),
                        sameAddress.size() == 1 ? "it stays" : "they stay", sameAddress.size() == 1 ? "it" : "them");
            }
        }
        if (failed != null) {
            LOG.warn("{}: {}{}; {} in the outbox, pending, and the sweep dispatches {} again", who,
                    LogSafe.text(results.get(failed.get(0)).getMessage()), more(failed, sendable, "not taken either"),
                    failed.size() == 1 ? "it stays" : "they stay", failed.size() == 1 ? "it" : "them");
        }
        return accepted;
    }

    /**
     * Records the failure in the store (best effort: the entry is pending either way), then in the health: in that
     * order, so that a status read which does not count it yet cannot clear the error ({@link OutboxState#read}).
     */
    private void record(OutboxEntry entry, String error, String who) {
        if (store != null) {
            try {
                store.outboxFailed(entry, error);
            } catch (RuntimeException e) {
                LOG.warn("{}: could not record in the outbox that message {} was not sent ({}); it stays pending",
                        who, LogSafe.id(entry.messageId()), Errors.describe(e));
            }
        }
        if (state != null) {
            state.failed(error);
        }
    }

    /** @return {@code " (and 3 more ...: id, id, id)"} for the indexes after the first, or nothing */
    private static String more(List<Integer> indexes, List<OutboxEntry> entries, String what) {
        if (indexes.size() == 1) {
            return "";
        }
        StringBuilder b = new StringBuilder(" (and ").append(indexes.size() - 1).append(" more ").append(what)
                .append(": ");
        int shown = Math.min(indexes.size(), IDS_PER_LINE + 1);
        for (int k = 1; k < shown; k++) {
            b.append(k == 1 ? "" : ", ").append(LogSafe.id(entries.get(indexes.get(k)).messageId()));
        }
        if (indexes.size() > shown) {
            b.append(", ...");
        }
        return b.append(')').toString();
    }
}
