package org.acemq.amqp.consumer.internal;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.client.DeliveryMode;
import org.apache.qpid.protonj2.client.DeliveryState;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.Session;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/** Opens a subscription's receiver with the attach the runtime needs: manual credit, settle mode, source terminus. */
final class Receivers {

    private Receivers() {
    }

    /**
     * @return the receiver, attached
     * @throws ClientException with the broker's refusal (condition and description) if the attach is refused
     */
    static Receiver open(Session session, Subscription spec, ConnectionSettings settings) throws ClientException {
        // A fresh options object every time: protonj2 keeps a live reference to it, and its copies drop the source's
        // default-outcome and outcomes.
        ReceiverOptions options = new ReceiverOptions();
        options.autoAccept(false);
        options.creditWindow(0);
        options.openTimeout(settings.openTimeout().toMillis());
        options.drainTimeout(settings.requestTimeout().toMillis());
        if (spec.linkName() != null) {
            options.linkName(spec.linkName());
        }
        if (spec.sourceCapability().symbol() != null) {
            options.sourceOptions().capabilities(spec.sourceCapability().symbol());
        }
        if (spec.acknowledgementMode() == AcknowledgementMode.AT_MOST_ONCE) {
            options.deliveryMode(DeliveryMode.AT_MOST_ONCE);
            // QPID-8345: a broker must apply the default outcome to pre-settled deliveries; accepted means "gone".
            options.sourceOptions().defaultOutcome(DeliveryState.accepted());
            options.sourceOptions().outcomes(DeliveryState.Type.ACCEPTED);
        } else {
            options.deliveryMode(DeliveryMode.AT_LEAST_ONCE);
            // Deliveries still unsettled when the link ends go back without counting an attempt: the store counts
            // attempts; the broker counting them too would dead-letter prefetched messages that never ran.
            options.sourceOptions().defaultOutcome(DeliveryState.released());
            options.sourceOptions().outcomes(DeliveryState.Type.ACCEPTED, DeliveryState.Type.REJECTED,
                    DeliveryState.Type.RELEASED, DeliveryState.Type.MODIFIED);
        }
        Receiver r = session.openReceiver(spec.address(), options);
        try {
            r.openFuture().get(settings.openTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            r.closeAsync();
            throw new ClientException("interrupted while attaching to " + spec.address(), e);
        } catch (ExecutionException | TimeoutException e) {
            r.closeAsync();
            throw new ClientException("cannot attach to '" + spec.address() + "': " + Errors.describe(e),
                    Errors.unwrap(e));
        }
        return r;
    }
}
