"""Descriptions from docstrings: Google, NumPy and reST styles, as tools and as parsed text."""

from __future__ import annotations

from toolnexus import tool
from toolnexus._docstrings import parse_docstring


def test_google_style() -> None:
    @tool
    def forecast(city: str, days: int = 1, units: str = "metric") -> str:
        """Weather forecast for a city.

        Uses the national service;   falls back
        to the cache.

        Args:
            city: The city name,
                as written locally.
            days (int): How many days ahead.
            units: Either "metric" or "imperial".

        Returns:
            The forecast text.
        """
        return city

    assert forecast.description == (
        "Weather forecast for a city. Uses the national service; falls back to the cache."
    )
    props = forecast.input_schema["properties"]
    assert props["city"]["description"] == "The city name, as written locally."
    assert props["days"]["description"] == "How many days ahead."
    assert props["units"]["description"] == 'Either "metric" or "imperial".'


def test_numpy_style() -> None:
    @tool
    def scale(values: list[float], factor: float, clip: bool = False) -> list[float]:
        """Scale values.

        Parameters
        ----------
        values : list of float
            The numbers
            to scale.
        factor : float
            Multiplier.
        clip
            Clip to [0, 1].

        Returns
        -------
        list of float
        """
        return values

    assert scale.description == "Scale values."
    props = scale.input_schema["properties"]
    assert props["values"]["description"] == "The numbers to scale."
    assert props["factor"]["description"] == "Multiplier."
    assert props["clip"]["description"] == "Clip to [0, 1]."


def test_rest_style() -> None:
    @tool
    def send(to: str, body: str, urgent: bool = False) -> str:
        """Send a message.

        :param to: Recipient address.
        :param str body: The text,
            possibly long.
        :param urgent: Flag it.
        :returns: the message id
        """
        return "id"

    assert send.description == "Send a message."
    props = send.input_schema["properties"]
    assert props["to"]["description"] == "Recipient address."
    assert props["body"]["description"] == "The text, possibly long."
    assert props["urgent"]["description"] == "Flag it."


def test_no_docstring_gives_empty_description_and_no_property_texts() -> None:
    @tool
    def bare(x: int) -> int:
        return x

    assert bare.description == ""
    assert bare.input_schema["properties"]["x"] == {"type": "integer"}


def test_description_only_and_sections_that_are_not_parameters() -> None:
    doc = parse_docstring(
        """
        Summary line.

        Note: this stays, it is not a parameter section.

        Raises:
            ValueError: never seen by the model.
        """
    )
    assert doc.description == "Summary line. Note: this stays, it is not a parameter section."
    assert doc.params == {}


def test_parser_edge_cases() -> None:
    assert parse_docstring(None).description == ""
    assert parse_docstring("   ").params == {}
    google = parse_docstring(
        """Do it.

        Arguments:
            *names: Names to greet.
            **options: Extra settings.
            plain: Text with a colon: inside.
        """
    )
    assert google.params == {
        "names": "Names to greet.",
        "options": "Extra settings.",
        "plain": "Text with a colon: inside.",
    }
    numpy = parse_docstring(
        """Pairs.

        Parameters
        ----------
        x, y : int
            Coordinates.
        """
    )
    assert numpy.params == {"x": "Coordinates.", "y": "Coordinates."}
