package org.acemq.amqp.consumer.internal;

import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the broker at the other end of the connection implements, decided from its identity (the {@code product} and
 * {@code version} properties of its open frame) and corrected by what it does. The attach reply's {@code outcomes} are
 * not used: RabbitMQ 3.x echoes whatever the client asked for, {@code modified} included.
 *
 * <ul>
 *   <li>RabbitMQ before 4: no {@code modified} (the first one ends the session with {@code amqp:invalid-field}), drains
 *       answered against the spec (a drained flow that still shows the credit, which protonj2 1.1.0 treats as a
 *       protocol error that fails the whole connection), no transactions.</li>
 *   <li>RabbitMQ 4 and later: {@code modified} and drains per spec; no transactions.</li>
 *   <li>ActiveMQ Artemis, and any broker not recognised: everything per spec.</li>
 * </ul>
 * A broker that ends a session because of a {@code modified} is remembered as not implementing it, whatever its
 * identity said ({@link #modifiedRefused}); that is logged once.
 */
final class BrokerProfile {

    private static final Logger LOG = LoggerFactory.getLogger(BrokerProfile.class);
    private static final Pattern MAJOR = Pattern.compile("^(\\d+)");

    private final String product;
    private final String version;
    private volatile boolean drainPerSpec;
    private final boolean transactions;
    private volatile boolean modified;

    private BrokerProfile(String product, String version, boolean modified, boolean drainPerSpec,
                          boolean transactions) {
        this.product = product;
        this.version = version;
        this.modified = modified;
        this.drainPerSpec = drainPerSpec;
        this.transactions = transactions;
    }

    /** @return the profile of a broker that has not said who it is: everything per spec */
    static BrokerProfile unknown() {
        return new BrokerProfile(null, null, true, true, true);
    }

    /**
     * @param openProperties the properties of the broker's open frame (string keys), or null
     * @return the broker's profile
     */
    static BrokerProfile of(Map<String, Object> openProperties) {
        if (openProperties == null) {
            return unknown();
        }
        String product = text(openProperties.get("product"));
        String version = text(openProperties.get("version"));
        if (product != null && product.toLowerCase(java.util.Locale.ROOT).contains("rabbitmq")) {
            boolean native10 = major(version) >= 4;
            return new BrokerProfile(product, version, native10, native10, false);
        }
        return new BrokerProfile(product, version, true, true, true);
    }

    private static String text(Object value) {
        return value == null ? null : value.toString();
    }

    private static int major(String version) {
        if (version == null) {
            return -1;
        }
        Matcher m = MAJOR.matcher(version.trim());
        return m.find() ? Integer.parseInt(m.group(1)) : -1;
    }

    /**
     * @param address a subscription's address
     * @return why consuming from this address on this broker can lose messages and what to use instead, or null when
     *     nothing is known against it: RabbitMQ 3 declares a queue named by {@code /queue/NAME} non-durable when it does
     *     not exist (a broker restart deletes it with its messages), and gives each link on {@code /exchange/…} or
     *     {@code /topic/…} an exclusive queue that dies with the link
     */
    String addressRisk(String address) {
        boolean rabbit3 = product != null && product.toLowerCase(java.util.Locale.ROOT).contains("rabbitmq")
                && major(version) < 4;
        if (!rabbit3 || address == null) {
            return null;
        }
        if (address.startsWith("/queue/")) {
            String name = address.substring("/queue/".length());
            return this + " declares the queue of a /queue/NAME address non-durable when it does not exist, so a broker"
                    + " restart deletes it and every message on it; declare a durable queue '" + name
                    + "' beforehand and subscribe to '/amq/queue/" + name + "' (docs/brokers.md)";
        }
        if (address.startsWith("/exchange/") || address.startsWith("/topic/")) {
            return this + " gives each link on an /exchange/… or /topic/… address an exclusive queue that is deleted"
                    + " with the link, so what is published while this consumer is detached or down is lost; bind a"
                    + " durable queue to the exchange and subscribe to '/amq/queue/NAME' (docs/brokers.md)";
        }
        return null;
    }

    /** @return the {@code product} the broker announced in its open frame, or null */
    String product() {
        return product;
    }

    /** @return whether a {@code modified} outcome is safe to send */
    boolean modifiedSupported() {
        return modified;
    }

    /** @return whether the broker answers a drain as the spec says (so the runtime may drain) */
    boolean drainPerSpec() {
        return drainPerSpec;
    }

    /** @return whether the broker supports AMQP local transactions */
    boolean transactions() {
        return transactions;
    }

    /**
     * The broker ended a session because of a {@code modified} outcome: use {@code released} from now on.
     *
     * @param description the broker's error
     */
    void modifiedRefused(String description) {
        if (modified) {
            modified = false;
            LOG.warn("The broker ({}) refused the 'modified' outcome and ended the session ({}); transient failures "
                    + "are settled 'released' from now on, and the session and its links are rebuilt", this,
                    description);
        }
    }

    /**
     * The connection failed because the broker answered a drain against the spec: never drain again.
     *
     * @param failure the connection's failure
     * @return whether that was the cause (and the profile changed)
     */
    boolean drainAnsweredAgainstSpec(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            String message = t.getMessage();
            if (message != null && message.contains("drain set but credit was not zero")) {
                if (drainPerSpec) {
                    drainPerSpec = false;
                    LOG.warn("The broker ({}) answered a drain against the AMQP spec and protonj2 failed the "
                            + "connection; the runtime will not drain on it again", this);
                }
                return true;
            }
        }
        return false;
    }

    /**
     * A drain was not answered within the request timeout: do not drain on this broker again.
     *
     * @return whether the profile changed
     */
    boolean drainUnanswered() {
        if (!drainPerSpec) {
            return false;
        }
        drainPerSpec = false;
        LOG.warn("The broker ({}) did not answer a drain within the request timeout; the runtime will not drain on it "
                + "again", this);
        return true;
    }

    /**
     * @param condition the error condition a session was ended with
     * @param description its description
     * @return whether that error is the broker refusing a {@code modified} outcome
     */
    static boolean refusesModified(String condition, String description) {
        return "amqp:invalid-field".equals(condition) && description != null
                && description.toLowerCase(java.util.Locale.ROOT).contains("modified");
    }

    @Override
    public String toString() {
        return product == null ? "unidentified broker" : product + (version == null ? "" : " " + version);
    }
}
