package org.acemq.amqp.consumer.internal;

/** At-least-once: the outcome goes to the broker as a settled disposition on the delivery's own link. */
final class DirectSettlement implements Settlement {

    private final Report report;

    DirectSettlement(Report report) {
        this.report = report;
    }

    @Override
    public boolean settle(Delivery d, Verdict v) {
        boolean sent = false;
        try {
            sent = d.link.send(d.amqp, v.outcome(), v.condition(), v.description());
        } finally {
            report.done(d, v.outcome(), v.reason(), sent);
        }
        return sent;
    }
}
