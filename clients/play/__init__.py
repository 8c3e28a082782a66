"""``nardy play``: a person plays long nardy in the terminal.

With no ``--server`` the client starts an arbiter of its own (``EmbeddedServer`` on a
loopback port, its journal in a temporary directory), creates a match with two open seats,
launches the chosen engine as a process on the second seat (``python -m clients engine NAME``
with ``NARDY_SERVER``/``NARDY_TOKEN``, run by :mod:`clients.supervisor`) and plays the first
seat in this process. With
``--server ADDR --token T`` it joins the game the token is seated in on a remote arbiter.

A turn is entered as a whole (``24/18 18/13``, ``24/13``, ``6/off``: submitted at once) or
step by step (``24/18``, then ``18/13``, then ``done``), with ``undo`` taking back the last
step. A point number alone (``24``) selects that checker and shows where it can go; a
number then moves it there. Steps the rules refuse are refused at once with the reason.

Colour: ``--colour white`` or ``black`` gives the person that colour in the first game
(CreateMatch's ``first_seat_color``); ``--colour random`` (the default) leaves it to the
opening throw. Every die comes from the arbiter's CSPRNG unless ``--dice`` scripts them.

Every game is saved as a record (``--records DIR``; default ``$NARDY_RECORDS`` or
``~/.local/share/nardy/games``) when the session ends, however it ends, and the
``nardy replay FILE`` command is printed. The package: this module launches; ``ui`` is the
screen and the game; ``commands`` reads what is typed; ``explore`` answers questions about
the rules (targets, why not, hints).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import grpc

from clients.board import fmt_clock
from clients.play.ui import PlayUI
from clients.supervisor import EngineProcess
from clients.term import Screen
from nardy.client import RETRYABLE, Client, Reconnect, Unreachable, run
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from nardy.variant import variant

log = logging.getLogger("nardy.play")

OPENING = {"white": pb.COLOR_WHITE, "black": pb.COLOR_BLACK}  # the person's first colour


def records_dir(args: argparse.Namespace) -> Path:
    """Where games are saved: --records, $NARDY_RECORDS, or the XDG data folder."""
    if getattr(args, "records", None):
        return Path(args.records)
    if os.environ.get("NARDY_RECORDS"):
        return Path(os.environ["NARDY_RECORDS"])
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return Path(data) / "nardy" / "games"


def _first_seat_color(args: argparse.Namespace) -> int:
    return OPENING.get(args.colour, pb.COLOR_UNSPECIFIED)


def _engine_label(args: argparse.Namespace) -> str:
    return args.engine + (f" L{args.level}" if args.level is not None else "")


def _title(args: argparse.Namespace) -> str:
    turn = fmt_clock(args.turn_time_ms)
    match = f"match to {args.points}" if args.points > 1 else "one game"
    return f"nardy - you vs {_engine_label(args)} - {match} - {turn} per turn"


async def _embedded(
    args: argparse.Namespace, address: str, logdir: str, screen: Screen, ui_out: list
) -> int:
    async with Client(address) as client, screen.session():
        r = await client.create_match(
            options=pb.GameOptions(
                variant=args.variant,
                turn_time_ms=args.turn_time_ms,
                auto_play_forced=False,
            ),
            target_points=args.points,
            first=api.SeatSpec(display_name=args.name),
            second=api.SeatSpec(display_name=_engine_label(args)),
            dice=list(args.dice or []),
            first_seat_color=_first_seat_color(args),
            start_position=args.start or "",
        )
        cmd = [sys.executable, "-P", "-m", "clients", "engine", args.engine]  # (-P: not cwd's)
        if args.level is not None:
            cmd += ["--level", str(args.level)]
        engine = EngineProcess(
            args.engine,
            cmd,
            Path(logdir) / "engine.log",
            env={"NARDY_SERVER": address, "NARDY_TOKEN": r.second_seat_token},
        )
        engine.start()
        ui = PlayUI(
            screen,
            client.with_token(r.first_seat_token),
            r.game_id,
            title=_title(args),
            engine=engine,
            local=True,
            record_dir=str(records_dir(args)),
        )
        ui_out.append(ui)
        ui.note(f"Starting {_engine_label(args)}... Type help for the commands.", "grey50")
        try:
            await ui.run()
        finally:
            ui.quitting = True
            engine.stop()
            screen.finish()
            save_records(ui, _engine_label(args))
    return 0


async def _assigned_game(client: Client, screen: Screen, server: str, give_up_s: float) -> str:
    """The first game the token is seated in (waiting for one to be created if need be);
    gives up (:class:`~nardy.client.Unreachable`) after ``give_up_s`` seconds without
    reaching the arbiter."""
    screen.say(
        "Waiting for a game to be assigned to this token... (a player token: challenge "
        "someone with nardy challenge, or wait for a challenge, a ladder or the operator)"
    )
    screen.refresh()
    told = False

    def lost(why: str, wait: float) -> None:
        nonlocal told
        if not told:
            told = True
            screen.say(
                f"Cannot reach the arbiter at {server} ({why}); "
                f"trying again for {give_up_s:.0f} s..."
            )
            screen.refresh()

    def back() -> None:
        nonlocal told
        told = False

    reconnect = Reconnect(give_up_s=give_up_s, max_backoff=1.0, on_lost=lost, on_back=back)
    async with contextlib.aclosing(client.player_events(reconnect=reconnect)) as events:
        async for ev in events:
            if ev.type == api.PLAYER_EVENT_TYPE_GAME_ASSIGNED:
                return ev.game_id
    raise AssertionError("the player stream ends only by an error")


async def _game_in_play(client: Client, game_id: str) -> str:
    """The game of ``game_id``'s match played now: an ended game's next one, in turn (the
    command that joined game 1, run again, joins game 2 rather than game 1's last board).
    A game that cannot be read is left to the game's view to report."""
    with contextlib.suppress(grpc.RpcError):
        while (st := (await client.get_game(game_id)).state).next_game_id:
            game_id = st.next_game_id
    return game_id


async def _remote(args: argparse.Namespace, screen: Screen, ui_out: list) -> int:
    async with Client(args.server, args.token) as client, screen.session():
        game_id = args.game
        if game_id:
            game_id = await _game_in_play(client, game_id)
        else:
            game_id = await _assigned_game(client, screen, args.server, args.give_up)
        ui = PlayUI(
            screen,
            client,
            game_id,
            title=f"nardy - {args.server}",
            where=args.server,
            record_dir=str(records_dir(args)),
            give_up_s=args.give_up,
        )
        ui_out.append(ui)
        ui.note("Joined the game. Type help for the commands.", "grey50")
        try:
            await ui.run()
        finally:
            screen.finish()
            save_records(ui, ui.opponent_name())
    return 0


def save_records(ui: PlayUI, opponent: str) -> None:
    """Fetch the session's games from the arbiter (blocking: the session is over) and
    write them, as one match record, to the records folder; ``ui.saved`` says how it went."""
    try:
        ui.saved = _save(ui.client.stub, ui.games, Path(ui.record_dir), opponent)
    except (grpc.RpcError, OSError, ValueError) as e:
        detail = e.details() if isinstance(e, grpc.RpcError) else str(e)
        ui.saved = f"the game could not be saved: {detail}"


def _save(stub, games: list[str], folder: Path, opponent: str) -> Path | None:
    from clients.export import fetch_record
    from nardy.record import dumps

    records = []
    for game_id in games:
        with contextlib.suppress(ValueError):  # (a game with no events yet)
            records.append(fetch_record(stub, game_id, guests=False))  # (its own games)
    if not records:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", opponent).strip("-") or "game"
    path = folder / f"{stamp}-vs-{name}.nrd"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"{stamp}-vs-{name}-{n}.nrd"
    path.write_text(dumps(records))
    return path


def _quiet_logging(path: str | None) -> None:
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    if path:
        logging.basicConfig(
            filename=path,
            level=logging.INFO,
            format="%(asctime)s %(levelname)s %(name)s %(message)s",
        )
    else:
        root.addHandler(logging.NullHandler())


@contextlib.contextmanager
def _stderr_to(path: str):
    """Send fd 2 to a file while the screen is live (gRPC's C core writes there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def check_args(args: argparse.Namespace) -> str | None:
    """Why the arguments cannot make a game, or None."""
    if args.server and not args.token and not os.environ.get("NARDY_TOKEN"):
        return "--server needs --token (or NARDY_TOKEN)"
    if not args.give_up > 0:
        return "--give-up is a number of seconds above 0"
    if not args.turn_time_ms > 0:
        return f"--turn-time-ms is a number of milliseconds above 0, not {args.turn_time_ms}"
    if args.turn_time_ms > 24 * 3600 * 1000:
        return "--turn-time-ms is at most a day (86400000 ms)"
    if args.start:
        try:
            variant(args.variant).parse(args.start)
        except ValueError as e:
            return f"--start: {e}"
    if args.server is None and not 1 <= args.points <= 99:
        return "--points is a match length such as 1, 3, 5 or 7"
    if args.server is None:
        from engines.registry import levels, names

        if args.engine not in names(args.variant):
            return f"--engine: {args.engine} does not play {args.variant} nardy; " + (
                f"choose {', '.join(names(args.variant))}"
            )
        offered = levels(args.engine)
        if args.level is not None and not offered:
            return f"--level: the {args.engine} engine has no levels"
        if args.level is not None and args.level not in offered:
            return f"--level: the {args.engine} engine has levels {offered[0]}-{offered[-1]}"
    return None


def main(args: argparse.Namespace) -> int:
    problem = check_args(args)
    if problem:
        print(f"nardy play: {problem}", file=sys.stderr)
        return 2
    screen = Screen(live=False if args.plain else None)
    logdir = tempfile.mkdtemp(prefix="nardy-play-")
    log_path = args.log or os.path.join(logdir, "client.log")
    _quiet_logging(log_path)
    keep_logs = False
    ui_out: list[PlayUI] = []
    code = 0
    after: list[str] = []  # what became of the game, said once the screen is closed
    failed: list[str] = []  # ... and what went wrong (stderr)
    try:
        with _stderr_to(log_path) if screen.live else contextlib.nullcontext():
            if args.server:
                args.token = args.token or os.environ.get("NARDY_TOKEN")
                try:
                    code = run(_remote, args, screen, ui_out)
                except KeyboardInterrupt:
                    code = 130
                except grpc.RpcError as e:
                    code = 1
                    failed.append(f"nardy play: {_rpc_error(e, args.server)}")
                except Unreachable as e:
                    code = 1
                    failed.append(
                        f"nardy play: cannot reach the arbiter at {args.server} ({e.why}); "
                        f"gave up after {e.seconds:.0f} s"
                    )
            else:
                from server.app import EmbeddedServer

                server = EmbeddedServer(db=os.path.join(logdir, "arbiter.db")).start()
                try:
                    code = run(_embedded, args, server.address, logdir, screen, ui_out)
                except KeyboardInterrupt:
                    code = 130
                except grpc.RpcError as e:  # (the game refused as asked: --start, --dice)
                    code = 2
                    failed.append(f"nardy play: {e.details()}")
                finally:
                    for sig in (signal.SIGHUP, signal.SIGTERM):
                        signal.signal(sig, signal.SIG_IGN)
                    after += _finish(ui_out, code)
                    t0 = time.monotonic()
                    server.stop()
                    log.info("arbiter stopped in %.2f s", time.monotonic() - t0)
            if args.server:
                after += _finish(ui_out, code)
    except Exception:
        keep_logs = True
        raise
    finally:
        # the terminal may be gone (SIGHUP again): let nothing stop the clean-up now
        for sig in (signal.SIGHUP, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        for line in after:
            print(line)
        for line in failed:
            print(line, file=sys.stderr)
        if keep_logs or args.keep_logs:
            print(f"nardy play: logs in {logdir}", file=sys.stderr)
        else:
            shutil.rmtree(logdir, ignore_errors=True)
    return code


def _rpc_error(e: grpc.RpcError, server: str) -> str:
    code = e.code()
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return f"the arbiter at {server} does not accept this token ({e.details()})"
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return f"the arbiter at {server} refused: {e.details()}"
    if code in RETRYABLE:
        return f"cannot reach the arbiter at {server} ({code.name.lower()}); gave up"
    return f"{e.details()} ({code.name})"


def _finish(ui_out: list, code: int) -> list[str]:
    """After the session: what became of the game, and where it was saved."""
    ui = ui_out[0] if ui_out else None
    if ui is None:
        return []
    lines = []
    if code == 130:
        lines.append(f"nardy play: interrupted. {ui.leaving_text(saved=False)}")
    if isinstance(ui.saved, Path):
        lines.append(f"Saved the game record: {ui.saved}")
        lines.append(f"  replay it with: nardy replay {shlex.quote(str(ui.saved))}")
    elif ui.saved:
        lines.append(f"nardy play: {ui.saved}")
    return lines
