"""The board: the projection of runs into cards (:mod:`.projection`), the web server with the
page's actions (:mod:`.server`) and the page itself (``static/``: plain JavaScript modules). A
surface: it stands on the engine and the core."""

from orchestrator.board.projection import Board as Board
from orchestrator.board.projection import BoardColumn as BoardColumn
from orchestrator.board.projection import Card as Card
from orchestrator.board.server import BoardHost as BoardHost
from orchestrator.board.server import board_app as board_app
