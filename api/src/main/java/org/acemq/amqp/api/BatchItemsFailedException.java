package org.acemq.amqp.api;

import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Thrown by a {@link BatchHandler} to say which messages of its batch failed, and why; every other message of the
 * batch succeeded. Items are named by their index in the batch.
 */
public class BatchItemsFailedException extends AcemqException {

    private static final long serialVersionUID = 1L;
    private final transient Map<Integer, Throwable> failures;

    /**
     * @param failures the failed items: index in the batch &rarr; why it failed (a {@link PermanentMessageException}
     *     rejects the message; anything else is a transient failure); not empty
     * @throws IllegalArgumentException if {@code failures} is empty or names a negative index
     */
    public BatchItemsFailedException(Map<Integer, ? extends Throwable> failures) {
        super(describe(failures), failures.isEmpty() ? null : failures.values().iterator().next());
        TreeMap<Integer, Throwable> copy = new TreeMap<>();
        failures.forEach((i, t) -> {
            if (i == null || i < 0) {
                throw new IllegalArgumentException("a failed item's index must be >= 0, but was " + i);
            }
            copy.put(i, Objects.requireNonNull(t, "the cause of item " + i + " must not be null"));
        });
        this.failures = Collections.unmodifiableMap(copy);
    }

    /**
     * One failed item.
     *
     * @param index its index in the batch
     * @param cause why it failed
     */
    public BatchItemsFailedException(int index, Throwable cause) {
        this(Map.of(index, cause));
    }

    /** @return the failed items: index in the batch &rarr; cause, in index order */
    public Map<Integer, Throwable> failures() {
        return failures;
    }

    private static String describe(Map<Integer, ? extends Throwable> failures) {
        if (failures.isEmpty()) {
            throw new IllegalArgumentException("a BatchItemsFailedException must name at least one failed item");
        }
        return failures.size() + " item(s) of the batch failed: " + new TreeMap<>(failures).keySet();
    }
}
