"""Signals become stop requests; a second one (or one during shutdown) exits at once."""
import os
import signal

from a3c.lifecycle.signals import StopSignals


def send(signum):
    os.kill(os.getpid(), signum)  # handlers run in the main thread before the next bytecode


def test_first_signal_records_the_reason_and_a_second_exits_now():
    exits, requests = [], []
    before = signal.getsignal(signal.SIGINT)
    with StopSignals(exits.append, requests.append) as signals:
        send(signal.SIGINT)
        assert signals.reason == "interrupted" and requests == ["interrupted"] and exits == []
        send(signal.SIGINT)
        assert exits == [130]
    assert signal.getsignal(signal.SIGINT) is before


def test_sigterm_is_terminated_and_a_signal_during_shutdown_exits_now():
    exits = []
    with StopSignals(exits.append) as signals:
        send(signal.SIGTERM)
        assert signals.reason == "terminated"
    with StopSignals(exits.append, ending=lambda: True) as signals:
        send(signal.SIGINT)
        assert signals.reason is None and exits == [130]
