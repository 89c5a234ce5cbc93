package org.acemq.amqp.samples.twoservices;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * What a run publishes: {@code orders} {@code PlaceOrder} commands, and copies of some of them, the way real
 * publishers produce copies:
 * <ul>
 *   <li><b>duplicates</b>: the same command again with the same message-id (a publisher that resent after a timeout);
 *       the order service absorbs them as any consumer keyed by message-id would;</li>
 *   <li><b>retries with a new id</b>: the same order again under a new message-id (a publisher that builds a fresh
 *       message for its retry); only a consumer keyed by the business order id absorbs them.</li>
 * </ul>
 * Each copy follows its original by 50 to 500 commands (or ends the plan), so that it usually arrives after the
 * original was handled and sometimes while it is being handled. Message-ids and order ids carry the run id, so runs
 * against a database or broker that outlive them never meet each other's commands. Immutable; the same arguments
 * give the same plan.
 */
public final class CommandPlan {

    /** What a published command is. */
    public enum Kind {
        /** the first copy of an order */
        ORIGINAL,
        /** the same message-id again */
        DUPLICATE,
        /** the same order under a new message-id */
        NEW_ID_RETRY
    }

    /**
     * One command as published.
     *
     * @param messageId its AMQP message-id
     * @param orderId the business order id (application property {@value OrderService#ORDER_ID})
     * @param customer a customer id
     * @param amountCents the amount
     * @param kind original or copy
     */
    public record Command(String messageId, String orderId, String customer, long amountCents, Kind kind) {

        /** @return the application properties the command carries */
        public Map<String, Object> properties() {
            return Map.of(OrderService.ORDER_ID, orderId, OrderService.CUSTOMER, customer,
                    OrderService.AMOUNT, amountCents);
        }

        /** @return the body: the same for every copy of one order (a retry resends the same content) */
        public String body() {
            return "{\"orderId\":\"" + orderId + "\",\"customer\":\"" + customer + "\",\"amountCents\":" + amountCents
                    + "}";
        }
    }

    private final String runId;
    private final int orders;
    private final List<Command> commands;
    private final int duplicates;
    private final int newIdRetries;

    private CommandPlan(String runId, int orders, List<Command> commands, int duplicates, int newIdRetries) {
        this.runId = runId;
        this.orders = orders;
        this.commands = List.copyOf(commands);
        this.duplicates = duplicates;
        this.newIdRetries = newIdRetries;
    }

    /**
     * @param runId a short id of the run, in every message-id and order id
     * @param orders distinct orders, at least 1
     * @param duplicateShare share of orders published a second time with the same message-id, 0 to 1
     * @param newIdRetryShare share of orders published a second time under a new message-id, 0 to 1 (an order gets
     *     at most one copy of each kind)
     * @param seed picks the copied orders and where their copies go
     * @return the plan
     */
    public static CommandPlan create(String runId, int orders, double duplicateShare, double newIdRetryShare,
            long seed) {
        if (orders < 1) {
            throw new IllegalArgumentException("orders must be at least 1, was " + orders);
        }
        checkShare("duplicates", duplicateShare);
        checkShare("new-id retries", newIdRetryShare);
        Random random = new Random(seed);
        List<double[]> slots = new ArrayList<>(); // {slot, order, kind ordinal}
        for (int n = 0; n < orders; n++) {
            slots.add(new double[] {n, n, Kind.ORIGINAL.ordinal()});
        }
        List<Integer> shuffled = new ArrayList<>();
        for (int n = 0; n < orders; n++) {
            shuffled.add(n);
        }
        Collections.shuffle(shuffled, random);
        int duplicates = (int) Math.round(orders * duplicateShare);
        for (int i = 0; i < duplicates; i++) {
            int n = shuffled.get(i);
            slots.add(new double[] {n + 50 + random.nextInt(451) + 0.5, n, Kind.DUPLICATE.ordinal()});
        }
        Collections.shuffle(shuffled, random);
        int retries = (int) Math.round(orders * newIdRetryShare);
        for (int i = 0; i < retries; i++) {
            int n = shuffled.get(i);
            slots.add(new double[] {n + 50 + random.nextInt(451) + 0.25, n, Kind.NEW_ID_RETRY.ordinal()});
        }
        slots.sort(Comparator.comparingDouble(s -> s[0]));
        List<Command> commands = new ArrayList<>(slots.size());
        for (double[] s : slots) {
            int n = (int) s[1];
            Kind kind = Kind.values()[(int) s[2]];
            String orderId = orderId(runId, n);
            String messageId = "cmd-" + runId + "-" + String.format(Locale.ROOT, "%07d", n)
                    + (kind == Kind.NEW_ID_RETRY ? "-retry" : "");
            commands.add(new Command(messageId, orderId, "customer-" + (n % 97), 100L + (n * 7919L) % 100_000,
                    kind));
        }
        return new CommandPlan(runId, orders, commands, duplicates, retries);
    }

    private static void checkShare(String what, double share) {
        if (!(share >= 0 && share <= 1)) {
            throw new IllegalArgumentException(what + " must be a share from 0 to 1, was " + share);
        }
    }

    /**
     * @param runId the run
     * @param n the order's number
     * @return its business id
     */
    public static String orderId(String runId, int n) {
        return "order-" + runId + "-" + String.format(Locale.ROOT, "%07d", n);
    }

    /** @return the order id of order {@code n} of this run */
    public String orderId(int n) {
        return orderId(runId, n);
    }

    /** @return what every order id of this run starts with */
    public String orderIdPrefix() {
        return "order-" + runId + "-";
    }

    /** @return the run id */
    public String runId() {
        return runId;
    }

    /** @return distinct orders */
    public int orders() {
        return orders;
    }

    /** @return copies with the same message-id */
    public int duplicates() {
        return duplicates;
    }

    /** @return copies under a new message-id */
    public int newIdRetries() {
        return newIdRetries;
    }

    /** @return everything to publish, in order: the originals and the copies */
    public List<Command> commands() {
        return commands;
    }
}
