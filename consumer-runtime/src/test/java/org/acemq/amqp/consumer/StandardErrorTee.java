package org.acemq.amqp.consumer;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * Copies what is written to {@code System.err} (where slf4j-simple logs in this module's tests) while it is open,
 * and still writes it through. Open it in the test and close it in a {@code finally} or try-with-resources.
 */
public final class StandardErrorTee implements AutoCloseable {

    private final PrintStream original = System.err;
    private final ByteArrayOutputStream captured = new ByteArrayOutputStream();

    public StandardErrorTee() {
        OutputStream tee = new OutputStream() {
            @Override
            public void write(int b) {
                original.write(b);
                synchronized (captured) {
                    captured.write(b);
                }
            }

            @Override
            public void write(byte[] b, int off, int len) {
                original.write(b, off, len);
                synchronized (captured) {
                    captured.write(b, off, len);
                }
            }
        };
        System.setErr(new PrintStream(tee, true, StandardCharsets.UTF_8));
    }

    /** @return the lines written so far that contain {@code text} */
    public List<String> lines(String text) {
        String all;
        synchronized (captured) {
            all = captured.toString(StandardCharsets.UTF_8);
        }
        return Arrays.stream(all.split("\n")).filter(l -> l.contains(text)).toList();
    }

    @Override
    public void close() {
        System.setErr(original);
    }
}
