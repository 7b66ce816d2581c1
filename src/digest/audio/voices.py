"""Offline voices: text in, 16-bit mono PCM out, with nothing fetched at run time.

espeak-ng (Debian's program, run as a separate process) is the built-in default;
a Piper voice model (`[audio] voice`, the `digest[voices]` extra) replaces it.
`voice_for` picks one from the config, or says in one line why there is none.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import wave
from pathlib import Path
from typing import Protocol

from digest.config import AudioConfig
from digest.errors import DeliveryError


class NoVoice(DeliveryError):
    """No voice can speak: espeak-ng is missing, or the Piper voice cannot be loaded."""


class Voice(Protocol):
    name: str

    def speak(self, text: str) -> tuple[bytes, int]:
        """`text` spoken: 16-bit mono PCM frames and their sample rate."""
        ...


class Espeak:
    """Debian's espeak-ng, one process per text: its WAV on stdout."""

    def __init__(self, program: str, config: AudioConfig) -> None:
        self.program, self.config = program, config
        self.name = f"espeak-ng ({config.espeak_voice})"

    def speak(self, text: str) -> tuple[bytes, int]:
        command = [self.program, "-v", self.config.espeak_voice]
        command += ["-s", str(self.config.words_per_minute), "--stdout"]
        try:
            done = subprocess.run(
                command,
                input=text.encode("utf-8"),
                capture_output=True,
                timeout=self.config.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise DeliveryError(f"audio: espeak-ng took over {exc.timeout:g} s; stopped") from exc
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise DeliveryError(f"audio: {self.program} failed: {why[-1] if why else done}")
        return _mono_pcm(done.stdout, self.program)


class Piper:
    """A Piper voice model (.onnx with its .json), run in process by piper-tts."""

    def __init__(self, model: Path) -> None:
        from piper import PiperVoice  # onnxruntime loads only when a Piper voice is configured

        config = Path(f"{model}.json")
        if not config.is_file():
            config = model.with_suffix(".json")
        try:
            self._voice = PiperVoice.load(model, config_path=config)
        except Exception as exc:  # onnxruntime's errors share no base class worth naming
            raise NoVoice(f"audio: cannot load Piper voice {model}: {exc}") from exc
        self.name = f"Piper ({model.stem})"

    def speak(self, text: str) -> tuple[bytes, int]:
        rate = int(self._voice.config.sample_rate)
        frames = b"".join(chunk.audio_int16_bytes for chunk in self._voice.synthesize(text))
        return frames, rate


def voice_for(config: AudioConfig) -> Voice:
    """The configured Piper voice, else espeak-ng; NoVoice says why neither can speak."""
    if config.voice is not None:
        if not config.voice.is_file():
            raise NoVoice(f"audio: no Piper voice at {config.voice} ([audio] voice)")
        try:
            return Piper(config.voice)
        except ImportError as exc:
            raise NoVoice(
                f"audio: [audio] voice is a Piper model but piper-tts is not installed ({exc});"
                " pip install 'digest[voices]'"
            ) from exc
    program = shutil.which(config.espeak)
    if program is None:
        raise NoVoice(
            f"audio: no voice installed: espeak-ng not found as {config.espeak!r} ([audio] espeak)"
            " and no Piper [audio] voice set; apt-get install espeak-ng"
        )
    return Espeak(program, config)


def _mono_pcm(wav: bytes, program: str) -> tuple[bytes, int]:
    """The frames and rate of a 16-bit mono WAV (espeak-ng writes one with an unknown length)."""
    try:
        with wave.open(io.BytesIO(wav)) as reader:
            if reader.getsampwidth() != 2 or reader.getnchannels() != 1:
                raise DeliveryError(f"audio: {program} wrote audio that is not 16-bit mono")
            return reader.readframes(reader.getnframes()), reader.getframerate()
    except (wave.Error, EOFError) as exc:
        raise DeliveryError(f"audio: {program} wrote no readable WAV: {exc}") from exc
