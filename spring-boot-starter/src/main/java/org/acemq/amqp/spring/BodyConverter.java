package org.acemq.amqp.spring;

import java.lang.reflect.Type;
import org.acemq.amqp.api.Envelope;

/**
 * Turns a message body into the type of an {@link AcemqListener} method's body parameter. Replace the default by
 * declaring a bean of this type.
 *
 * <p>The default converter returns the body itself when it already has the requested type; converts between
 * {@code String} and {@code byte[]} in UTF-8; and otherwise reads a {@code String} or {@code byte[]} body as JSON
 * with the application's Jackson 3 {@code JsonMapper} bean (or a Jackson 2 {@code ObjectMapper} bean, or a mapper of
 * its own when the application has none but Jackson is on the class path).
 *
 * <p><b>Threading:</b> called on the consumer's handler threads, concurrently; implementations must be thread-safe.
 */
@FunctionalInterface
public interface BodyConverter {

    /**
     * Converts the body of {@code envelope}.
     *
     * @param envelope the message (its {@link Envelope#body()} is the decoded AMQP body: a {@code String}, a
     *     {@code byte[]} for data sections, or another AMQP value such as a {@code Map})
     * @param targetType the parameter's type, with its generic arguments ({@code List<Order>})
     * @return the value to pass to the method; may be null only for a null body
     * @throws Exception if the body cannot be converted; the message is then rejected with condition
     *     {@code amqp:decode-error} (a body that cannot be converted now never can), unless the exception is a
     *     {@link org.acemq.amqp.api.PermanentMessageException} of its own, which is passed on as it is
     */
    Object convert(Envelope envelope, Type targetType) throws Exception;
}
