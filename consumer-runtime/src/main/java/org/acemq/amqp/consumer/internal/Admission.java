package org.acemq.amqp.consumer.internal;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The admit stage, for a batch the intake took from the client together: reads each delivery ({@link Reader}),
 * claims the keys of those the policy sends to the store with one store call ({@link StoreClaims}), and ends those
 * decided already (bad input, duplicates, in-progress copies, poison, a store that is down) through the end and
 * settle stages. What is left is admitted: it waits for a handler thread.
 */
final class Admission {

    private final Reader reader;
    private final Verdicts verdicts;
    private final StoreClaims claims;
    private final Completions ending;
    private final Settler settler;

    Admission(Reader reader, Verdicts verdicts, StoreClaims claims, Completions ending, Settler settler) {
        this.reader = reader;
        this.verdicts = verdicts;
        this.claims = claims;
        this.ending = ending;
        this.settler = settler;
    }

    /**
     * A key that appears twice in the batch is claimed once here; its later copy is claimed when a thread starts it, so
     * that at concurrency 1 it finds the first copy confirmed (a duplicate), as it would have one at a time.
     *
     * @param batch deliveries in the order received ({@link Delivery.State#RECEIVED})
     * @return the admitted deliveries, whose handlers are to run, in the order received
     */
    List<Delivery> admit(List<Delivery> batch) {
        int n = batch.size();
        List<Delivery> toClaim = new ArrayList<>(n);
        Set<String> keys = n > 1 ? new HashSet<>(n * 2) : null;
        for (int i = 0; i < n; i++) {
            Delivery d = batch.get(i);
            try {
                d.facts = reader.read(d);
                Verdict v = verdicts.decide(d, d.facts);
                if (v.action() != Verdict.Action.CLAIM) {
                    verdicts.log(d, v);
                    d.completed(settler.settle(d, v));
                } else if (keys != null && !keys.add(d.key)) {
                    d.claimAtStart = true;
                } else {
                    toClaim.add(d);
                }
            } catch (RuntimeException | Error e) {
                settler.failed(d, e);
            }
        }
        if (!toClaim.isEmpty()) {
            try {
                claims.claim(toClaim);
            } catch (RuntimeException | Error e) {
                for (Delivery d : toClaim) {
                    settler.failed(d, e);
                }
            }
        }
        return afterClaims(batch);
    }

    private List<Delivery> afterClaims(List<Delivery> batch) {
        List<Delivery> run = new ArrayList<>(batch.size());
        boolean handedOver = false;
        for (Delivery d : batch) {
            try {
                if (d.claimAtStart) {
                    d.moveTo(Delivery.State.ADMITTED);
                    run.add(d);
                    continue;
                }
                if (d.state() != Delivery.State.RECEIVED || d.facts == null
                        || d.facts.stage() != DeliveryFacts.Stage.CLAIMED) {
                    continue; // settled above
                }
                Verdict v = verdicts.decide(d, d.facts);
                if (v.action() == Verdict.Action.RUN) {
                    d.moveTo(Delivery.State.ADMITTED);
                    run.add(d);
                } else {
                    verdicts.log(d, v);
                    handedOver |= ending.end(d, v, false);
                }
            } catch (RuntimeException | Error e) {
                settler.failed(d, e);
            }
        }
        if (handedOver) {
            ending.drive();
        }
        return run;
    }
}
