package org.acemq.amqp.consumer.internal;

import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.Ticker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One subscription's pipeline, wired once: each stage gets exactly the collaborators it uses, in its constructor.
 * A delivery goes intake &rarr; read and claim ({@link Admission}: {@link Reader}, {@link StoreClaims}) &rarr; run
 * ({@link Runner}) &rarr; end its claim ({@link Completions}, {@link ClaimEnds}) &rarr; settle ({@link Settler},
 * {@link Settlement}); {@link OutcomePolicy} decides at each step ({@link Verdicts}), and what is left at shutdown goes
 * the same way ({@link Leftovers}). docs/runtime.md draws it.
 */
final class Pipeline {

    private static final Logger LOG = LoggerFactory.getLogger(Pipeline.class);

    final OutcomePolicy policy;
    final Settlement settlement;
    final Holds holds;
    final LinkKeeper links;
    final HandlerThreads threads;

    /**
     * @param leasePeriodNanos the store's lease renewal period, 0 if it has no leases
     * @param connectionLost told when a receive finds the connection gone for good
     */
    Pipeline(Subscription spec, RuntimeConfig config, SessionHandle sessions, SafeObserver observer,
             StoreAccess store, StoreGate gate, CreditAllocator allocator, Control control, CurrentBroker broker,
             EngineHooks hooks, long leasePeriodNanos, Consumer<Throwable> connectionLost) {
        String name = spec.name();
        Ticker ticker = config.ticker();
        long beatNanos = spec.renewLeases() ? leasePeriodNanos : 0;
        this.policy = new OutcomePolicy(spec, config.storeFailurePolicy());
        this.holds = new Holds(control.scheduler());
        Settlement.Report report = new Settlement.Report(name, observer, allocator);
        this.settlement = switch (spec.acknowledgementMode()) {
            case AT_LEAST_ONCE -> new DirectSettlement(report);
            case AT_MOST_ONCE -> new PreSettledSettlement(report);
            case TRANSACTIONAL -> new TransactionalSettlement(report, policy, ticker, spec.transactionBatchSize(),
                    spec.transactionBatchTime());
        };
        this.links = new LinkKeeper(spec, sessions, config.connection(), allocator, control, broker, hooks, observer,
                settlement, policy, connectionLost);
        BooleanSupplier quiet = links::quiet;
        Keys keys = new Keys(spec, config.scopePrefix());
        LOG.info("Subscription '{}' on '{}': keys from {} in scope '{}', fingerprint {}", name, spec.address(),
                spec.keySource(), LogSafe.id(keys.scope()), spec.fingerprint());

        Verdicts verdicts = new Verdicts(spec, policy);
        Settler settler = new Settler(name, policy, settlement, holds, store, quiet);
        ClaimEnds ends = new ClaimEnds(name, policy, store, gate, ticker, control.scheduler(),
                config.confirmTimeout());
        Completions ending = new Completions(name, policy, settler, ends, ticker, beatNanos);
        StoreClaims claims = new StoreClaims(name, store, gate, observer, ticker, beatNanos, keys.fingerprints());
        Admission admission = new Admission(new Reader(name, spec.address(), keys, quiet, gate), verdicts, claims,
                ending, settler);
        long horizonNanos = Intake.horizonNanos(beatNanos);
        HandlerTimes times = new HandlerTimes(horizonNanos); // until handlers are timed: one delivery per thread
        Runner runner = new Runner(name, spec.handler(), quiet, verdicts, claims, ending, settler, observer, ticker,
                broker, () -> ThreadLocalRandom.current().nextDouble(), times);
        Intake intake = new Intake(name, spec.concurrency(), spec.prefetch(), links, admission, times, ticker,
                horizonNanos);
        Leftovers leftovers = new Leftovers(name, intake, admission, runner, verdicts, ending, settler, quiet);
        this.threads = new HandlerThreads(name, spec.concurrency(), intake, runner, leftovers, ending, links,
                policy.handlesLeftAtShutdown());
    }
}
