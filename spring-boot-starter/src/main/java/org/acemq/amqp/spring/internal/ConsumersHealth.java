package org.acemq.amqp.spring.internal;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.spring.AcemqListenerContainer;

/**
 * The {@code acemq} health of a container as a status code and details, with no Actuator type in it, so that the
 * health contributor of each Boot line only wraps it. No I/O: it reads the consumers' snapshots.
 *
 * <p>One consumer (every listener on one connection): its state, connection, store and pause flags, last error and
 * subscriptions (and {@code outbox} with a store that keeps one: pending, oldest, failing, last error) at the top
 * level, and {@code connection} naming the connection. Several: the overall status is the
 * worst of theirs ({@code DOWN}, then {@code OUT_OF_SERVICE}, then {@code UP}), and {@code connections} holds, per
 * connection name, that connection's status and the same details.
 *
 * @param status {@code UP}, {@code DOWN}, {@code OUT_OF_SERVICE} or {@code UNKNOWN}
 * @param details the details, in order
 */
record ConsumersHealth(String status, Map<String, Object> details) {

    static final String UP = "UP";
    static final String DOWN = "DOWN";
    static final String OUT_OF_SERVICE = "OUT_OF_SERVICE";
    static final String UNKNOWN = "UNKNOWN";

    /** From best to worst: the overall status of several connections is the one latest in this list. */
    private static final List<String> SEVERITY = List.of(UP, OUT_OF_SERVICE, DOWN);

    /**
     * @param container the listener container
     * @return its health now
     */
    static ConsumersHealth of(AcemqListenerContainer container) {
        Map<String, AmqpConsumer> consumers = container.consumers();
        if (consumers.isEmpty()) {
            return new ConsumersHealth(UNKNOWN, Map.of("state", "NOT_STARTED"));
        }
        if (consumers.size() == 1) {
            Map.Entry<String, AmqpConsumer> only = consumers.entrySet().iterator().next();
            ConsumerHealth h = only.getValue().health();
            Map<String, Object> details = new LinkedHashMap<>();
            details.put("connection", only.getKey());
            details.putAll(details(h));
            return new ConsumersHealth(status(h), details);
        }
        String worst = UP;
        Map<String, Object> connections = new LinkedHashMap<>();
        for (Map.Entry<String, AmqpConsumer> e : consumers.entrySet()) {
            ConsumerHealth h = e.getValue().health();
            String status = status(h);
            if (SEVERITY.indexOf(status) > SEVERITY.indexOf(worst)) {
                worst = status;
            }
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("status", status);
            one.putAll(details(h));
            connections.put(e.getKey(), one);
        }
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("connections", connections);
        return new ConsumersHealth(worst, details);
    }

    /** @return the status of one consumer */
    static String status(ConsumerHealth h) {
        if (h.healthy()) {
            return UP;
        }
        return switch (h.state()) {
            case STOPPING, STOPPED -> OUT_OF_SERVICE;
            default -> DOWN;
        };
    }

    /** @return one consumer's details: its state, its subscriptions and, with a store that keeps one, its outbox */
    static Map<String, Object> details(ConsumerHealth h) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("state", h.state().name());
        d.put("connected", h.connected());
        d.put("storeReachable", h.storeReachable());
        d.put("paused", h.paused());
        if (h.lastError() != null) {
            d.put("lastError", h.lastError());
        }
        Map<String, Object> subscriptions = new LinkedHashMap<>();
        for (ConsumerHealth.SubscriptionHealth s : h.subscriptions()) {
            Map<String, Object> link = new LinkedHashMap<>();
            link.put("address", s.address());
            link.put("attached", s.attached());
            if (s.stopped()) {
                link.put("stopped", true);
            }
            link.put("inFlight", s.inFlight());
            link.put("credit", s.credit());
            link.put("oldestInFlight", s.oldestInFlight().toString());
            link.put("oldestClaim", s.oldestClaim().toString());
            subscriptions.put(s.name(), link);
        }
        d.put("subscriptions", subscriptions);
        ConsumerHealth.OutboxHealth outbox = h.outbox();
        if (outbox != null) {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("pending", outbox.pending());
            o.put("oldestPending", outbox.oldestPending().toString());
            o.put("maxAge", outbox.maxAge().toString());
            o.put("overdue", outbox.overdue());
            o.put("failing", outbox.failing());
            if (outbox.lastError() != null) {
                o.put("lastError", outbox.lastError());
            }
            d.put("outbox", o);
        }
        return d;
    }
}
