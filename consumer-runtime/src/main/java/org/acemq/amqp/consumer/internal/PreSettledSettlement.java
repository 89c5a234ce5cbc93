package org.acemq.amqp.consumer.internal;

/**
 * At-most-once: the broker settled the delivery when it sent it (snd-settle-mode {@code settled}), so nothing goes on
 * the wire. A broker that ignores the settled mode sends the transfer unsettled; then the verdict's outcome
 * ({@code accepted}, or {@code rejected} for bad input) is sent, so the message is not left acquired for ever (the
 * QPID-8345 failure) — through the link check, since after a reconnect protonj2 would drop it silently.
 */
final class PreSettledSettlement implements Settlement {

    private final Report report;

    PreSettledSettlement(Report report) {
        this.report = report;
    }

    @Override
    public boolean settle(Delivery d, Verdict v) {
        boolean preSettled;
        try {
            preSettled = preSettled(d);
        } catch (RuntimeException e) {
            report.done(d, v.outcome(), v.reason(), false);
            throw e;
        }
        return preSettled ? report.done(d, v.outcome(), v.reason(), true)
                : report.settleDirect(d, v.outcome(), v.condition(), v.description(), v.reason());
    }

    private static boolean preSettled(Delivery d) {
        try {
            return d.arrival.amqp().remoteSettled();
        } catch (org.apache.qpid.protonj2.client.exceptions.ClientException e) {
            return false; // the link is gone: the send below finds it invalid and the delivery is abandoned
        }
    }
}
