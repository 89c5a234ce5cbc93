package org.acemq.amqp.consumer.internal;

import java.util.List;
import java.util.function.BooleanSupplier;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shutdown stage: what is left when a subscription stops goes through the same stages as any delivery, with the
 * facts saying that it stops, so the policy decides its fate like any other ({@link OutcomePolicy}: in the
 * at-least-once modes it goes back, {@code released}/{@code shutdown}, its claim released first; at-most-once ones
 * are run, since the broker settled them already). Two kinds are left: deliveries admitted that no thread started,
 * and deliveries the client still holds for the link.
 */
final class Leftovers {

    private static final Logger LOG = LoggerFactory.getLogger(Leftovers.class);

    private final String name;
    private final Intake intake;
    private final Admission admission;
    private final Runner runner;
    private final Verdicts verdicts;
    private final Completions ending;
    private final Settler settler;
    private final BooleanSupplier stopping;

    /** @param stopping whether the subscription is stopping */
    Leftovers(String name, Intake intake, Admission admission, Runner runner, Verdicts verdicts,
              Completions ending, Settler settler, BooleanSupplier stopping) {
        this.name = name;
        this.intake = intake;
        this.admission = admission;
        this.runner = runner;
        this.verdicts = verdicts;
        this.ending = ending;
        this.settler = settler;
        this.stopping = stopping;
    }

    /**
     * Ends the deliveries left: first those admitted and not started (their claims ended together, in one store
     * call), then those the client holds for {@code link}, taken without waiting for more.
     *
     * @param admitted admitted deliveries no thread started, removed from the intake
     * @param link the link whose queued deliveries are taken, or null for none
     * @param slot the slot of the thread doing it (health and the lease heartbeat see what it runs)
     */
    void drain(List<Delivery> admitted, ReceiverLink link, HandlerSlot slot) {
        boolean handedOver = false;
        for (Delivery d : admitted) {
            try {
                d.facts = d.facts.waited(stopping.getAsBoolean(), !d.live());
                Verdict v = verdicts.decide(d, d.facts);
                if (!v.settles()) {
                    runner.run(d);
                    continue;
                }
                verdicts.log(d, v);
                handedOver |= ending.end(d, v, false);
            } catch (RuntimeException | Error e) {
                settler.failed(d, e);
            }
        }
        if (handedOver) {
            ending.drive();
        }
        if (link != null) {
            takeQueued(link, slot);
        }
    }

    private void takeQueued(ReceiverLink link, HandlerSlot slot) {
        try {
            org.apache.qpid.protonj2.client.Delivery amqp;
            while ((amqp = link.receiver.tryReceive()) != null) {
                Delivery d = intake.take(link, amqp);
                slot.current = d;
                try {
                    for (Delivery admitted : admission.admit(List.of(d))) {
                        runner.run(admitted);
                    }
                } catch (RuntimeException | Error e) {
                    LOG.error("Subscription '{}': a delivery could not be processed or settled", name, e);
                } finally {
                    slot.current = null;
                }
            }
        } catch (ClientException e) {
            LOG.debug("Taking the deliveries left in '{}' failed: {}", name, Errors.describe(e));
        }
    }
}
