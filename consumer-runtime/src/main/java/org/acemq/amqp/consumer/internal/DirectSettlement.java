package org.acemq.amqp.consumer.internal;

/** At-least-once: the outcome goes to the broker as a settled disposition on the delivery's own link. */
final class DirectSettlement implements Settlement {

    private final Report report;

    DirectSettlement(Report report) {
        this.report = report;
    }

    @Override
    public boolean settle(Delivery d, Verdict v) {
        return report.settleDirect(d, v.outcome(), v.condition(), v.description(), v.reason());
    }
}
