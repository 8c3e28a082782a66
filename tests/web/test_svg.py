"""The SVG board (web view and ``nardy export --svg``): a faithful, well-formed picture."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

from nardy import Position
from nardy.svg import state_svg
from nardy.v1 import game_pb2 as pb

NS = "{http://www.w3.org/2000/svg}"
ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def _state(position: str, **kw) -> pb.GameState:
    return pb.GameState(
        status=pb.GAME_STATUS_IN_PROGRESS,
        position=position,
        side_to_move=pb.COLOR_WHITE,
        white=pb.Player(name=kw.pop("white", "alice")),
        black=pb.Player(name="bob"),
        **kw,
    )


def test_every_checker_is_drawn_and_names_are_escaped():
    start = Position.start().text()
    svg = state_svg(_state(start, white="<script>x</script>", dice=[6, 5]))
    root = ET.fromstring(svg)  # well-formed XML
    assert "<script>" not in svg
    checkers = root.findall(f".//{NS}circle")
    # 15 at each head: five drawn per point, the fifth carrying the count
    assert len(checkers) == 10
    labels = [t.text for t in root.findall(f".//{NS}text")]
    assert labels.count("15") >= 2
    assert len(root.findall(f".//{NS}rect[@class='die']")) == 2


def test_the_last_play_is_ringed_where_it_landed():
    after = "b/14,0,0,0,0,0,1,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0"  # white played 24/18
    play = pb.PlayRecord(side=pb.COLOR_WHITE, dice=[6, 1], notation="24/18")
    root = ET.fromstring(state_svg(_state(after), last_play=play))
    ringed = [c for c in root.findall(f".//{NS}circle") if c.get("stroke-width") == "4"]
    assert len(ringed) == 1
    point_18 = root.find(f".//{NS}polygon[@data-point='18']")
    x = float(point_18.get("points").split()[0].split(",")[0])
    assert x < float(ringed[0].get("cx")) < x + 40


def test_export_svg_of_a_finished_game(tmp_path):
    from nardy.client import SimpleClient
    from server.app import EmbeddedServer

    with EmbeddedServer(db=str(tmp_path / "a.db")) as srv:
        with SimpleClient(srv.address) as c:
            r = c.create_match(options=pb.GameOptions(turn_time_ms=200), seed=2)
            seat = SimpleClient(srv.address, r.first_seat_token)
            other = SimpleClient(srv.address, r.second_seat_token)
            for client in (seat, other):  # both seated: the game starts, then times out
                next(iter(client.events(r.game_id)))
            for _ in seat.events(r.game_id):
                pass
            seat.close()
            other.close()
        out = subprocess.run(
            [sys.executable, "-m", "clients", "export", r.game_id, "--svg", "--server"]
            + [srv.address],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        )
    assert out.returncode == 0, out.stderr
    root = ET.fromstring(out.stdout)
    assert root.get("class") == "nardy-board"
    assert len(root.findall(f".//{NS}circle")) == 10


def test_short_nardy_through_the_variants_board_view():
    # backgammon's start, white's 6-point one short and that checker on the bar (RULES §8)
    position = "w/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,4,0,0,0,0,-2/1,0"
    state = _state(position)
    state.options.variant = "short"
    root = ET.fromstring(state_svg(state))
    circles = root.findall(f".//{NS}circle")
    assert len(circles) == 2 + 5 + 3 + 5 + 5 + 3 + 4 + 2 + 1  # five drawn per point at most
    # white's 6-point (its own numbers) holds the four white checkers
    six = root.find(f".//{NS}polygon[@data-point='6']")
    x = float(six.get("points").split()[0].split(",")[0])
    on_six = [c for c in circles if x < float(c.get("cx")) < x + 40 and "white" in c.get("class")]
    assert len(on_six) == 4
    # and one white checker on the bar, between the halves
    from nardy.svg import BAR_W, EDGE, W

    bar_x = EDGE + 6 * W + BAR_W / 2
    assert [c.get("class") for c in circles if float(c.get("cx")) == bar_x] == ["checker white"]
