package org.acemq.amqp.consumer;

/**
 * Turns the runtime's protonj2 engine hooks off for consumers started inside {@link #run}, through the documented
 * system property {@code acemq.engineHooks=false}: the way to show what a protection does by removing it.
 */
final class EngineHooksOff {

    private static final String PROPERTY = "acemq.engineHooks";

    interface Body {
        void run() throws Exception;
    }

    private EngineHooksOff() {
    }

    static synchronized void run(Body body) throws Exception {
        String before = System.getProperty(PROPERTY);
        System.setProperty(PROPERTY, "false");
        try {
            body.run();
        } finally {
            if (before == null) {
                System.clearProperty(PROPERTY);
            } else {
                System.setProperty(PROPERTY, before);
            }
        }
    }
}
