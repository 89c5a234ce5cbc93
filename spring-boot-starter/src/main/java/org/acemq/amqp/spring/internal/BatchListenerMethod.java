package org.acemq.amqp.spring.internal;

import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.acemq.amqp.api.BatchHandler;
import org.acemq.amqp.api.BatchItemsFailedException;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.PermanentMessageException;
import org.springframework.core.MethodParameter;
import org.springframework.core.ResolvableType;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.annotation.SynthesizingMethodParameter;
import org.springframework.messaging.handler.invocation.HandlerMethodArgumentResolver;

/**
 * Calls one batch listener method for a batch: every parameter is a {@code List} with one element per message,
 * resolved for that message as a single-message listener's parameter of the element type would be
 * ({@link ElementParameter}), and the lists are parallel (the i-th element of each belongs to the same message).
 *
 * <p>A message one of whose elements cannot be resolved (its body does not convert, its payload is not valid) fails
 * alone and permanently, as it would in a single-message listener, and the method is called with the others; it is
 * not called at all if no message is left. The method's {@link BatchItemsFailedException} names items of the lists it
 * was given; they are mapped back to the batch's positions. Any other exception fails every message the method was
 * given. What the runtime receives is one {@link BatchItemsFailedException} covering both kinds of failure, or the
 * method's own exception when every message reached it.
 */
final class BatchListenerMethod implements BatchHandler {

    /** One parameter: the list's element as a parameter of its own, and its resolver. */
    record Element(ElementParameter parameter, HandlerMethodArgumentResolver resolver, boolean payload) {
    }

    private final ListenerMethod.Invocable method;
    private final List<Element> elements;
    private final int payloadIndex;
    private final ListenerMethods.PayloadResolver keyPayload;
    private final String description;

    BatchListenerMethod(ListenerMethod.Invocable method, List<Element> elements, int payloadIndex,
            ListenerMethods.PayloadResolver keyPayload, String description) {
        this.method = method;
        this.elements = List.copyOf(elements);
        this.payloadIndex = payloadIndex;
        this.keyPayload = keyPayload;
        this.description = description;
    }

    @Override
    public void handle(List<Envelope> batch) throws Exception {
        int size = batch.size();
        Map<Integer, Throwable> failed = new TreeMap<>();
        List<List<Object>> lists = new ArrayList<>(elements.size());
        for (int j = 0; j < elements.size(); j++) {
            lists.add(new ArrayList<>(size));
        }
        int[] positions = new int[size];
        int given = 0;
        Object[] row = new Object[elements.size()];
        for (int i = 0; i < size; i++) {
            Envelope envelope = batch.get(i);
            EnvelopeMessage message = EnvelopeMessage.of(envelope);
            try {
                for (int j = 0; j < row.length; j++) {
                    Element e = elements.get(j);
                    row[j] = ListenerMethod.argument(e.resolver(), e.parameter(), message, envelope, e.payload(),
                            description);
                }
            } catch (PermanentMessageException e) {
                failed.put(i, e);
                continue;
            }
            for (int j = 0; j < row.length; j++) {
                lists.get(j).add(row[j]);
            }
            positions[given++] = i;
        }
        if (given > 0) {
            Object[] args = new Object[lists.size()];
            for (int j = 0; j < args.length; j++) {
                args[j] = Collections.unmodifiableList(lists.get(j));
            }
            try {
                method.call(args);
            } catch (BatchItemsFailedException e) {
                mapBack(e, positions, given, failed);
            } catch (Exception e) {
                if (failed.isEmpty()) {
                    throw e;
                }
                for (int k = 0; k < given; k++) {
                    failed.put(positions[k], e);
                }
            }
        }
        if (!failed.isEmpty()) {
            throw new BatchItemsFailedException(failed);
        }
    }

    /** The method's failed items (indexes into the lists it was given) at their positions in the batch. */
    private void mapBack(BatchItemsFailedException e, int[] positions, int given, Map<Integer, Throwable> failed) {
        for (Map.Entry<Integer, Throwable> item : e.failures().entrySet()) {
            if (item.getKey() >= given) {
                // it named an item it was not given: nothing says which messages failed, so every one did
                IllegalStateException all = new IllegalStateException(description + " named item " + item.getKey()
                        + " of the " + given + " it was given as failed; every one is taken as failed", e);
                for (int k = 0; k < given; k++) {
                    failed.put(positions[k], all);
                }
                return;
            }
        }
        e.failures().forEach((index, cause) -> failed.put(positions[index], cause));
    }

    /**
     * @param envelope a message
     * @return its body as the method's payload list receives it (not validated); the decoded body when the method has
     *     no payload list
     * @throws Exception if it cannot be converted
     */
    Object payload(Envelope envelope) throws Exception {
        if (payloadIndex < 0) {
            return envelope.body();
        }
        return keyPayload.resolveArgument(elements.get(payloadIndex).parameter(), EnvelopeMessage.of(envelope));
    }

    @Override
    public String toString() {
        return "@AcemqListener " + description + " (batch)";
    }

    /**
     * A {@code List<E>} parameter seen as a parameter of type {@code E}, so that Spring's argument resolvers and
     * converters resolve one element as they would resolve a single-message listener's parameter (its annotations,
     * {@code @Payload}, {@code @Valid}, {@code @Header}, are the list's). Resolved by its own resolver, never through
     * the composite's cache (it equals the list's parameter there).
     */
    static final class ElementParameter extends SynthesizingMethodParameter {
        private final Type type;
        private final Class<?> raw;

        /**
         * @param list a {@code List<E>} parameter
         * @param names how parameter names are found (a {@code @Header} without a name takes the parameter's)
         */
        ElementParameter(MethodParameter list, ParameterNameDiscoverer names) {
            super(list.getMethod(), list.getParameterIndex());
            initParameterNameDiscovery(names);
            ResolvableType element = ResolvableType.forMethodParameter(list).getGeneric(0);
            this.type = element == ResolvableType.NONE ? Object.class : element.getType();
            this.raw = element.resolve(Object.class);
        }

        private ElementParameter(ElementParameter original) {
            super(original);
            this.type = original.type;
            this.raw = original.raw;
        }

        @Override
        public Class<?> getParameterType() {
            return raw;
        }

        @Override
        public Type getGenericParameterType() {
            return type;
        }

        @Override
        public ElementParameter clone() {
            return new ElementParameter(this);
        }
    }
}
