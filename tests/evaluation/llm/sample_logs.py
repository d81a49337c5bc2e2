"""Conversation logs used by the LLM-layer tests (``log`` protocol, formats spec §2)."""

from __future__ import annotations

ITEM_NAMES = {
    "m-nemo": "Finding Nemo (2003)",
    "m-moana": "Moana (2016)",
    "m-sing": "Sing (2016)",
    "m-getout": "Get Out (2017)",
    "m-dory": "Finding Dory (2016)",
    "m-luca": "Luca (2021)",
    "m-ponyo": "Ponyo (2008)",
    "m-songsea": "Song of the Sea (2014)",
    "m-wolfwalkers": "Wolfwalkers (2020)",
    "m-littlemermaid": "The Little Mermaid (1989)",
    "m-sharktale": "Shark Tale (2004)",
    "m-seabeast": "The Sea Beast (2022)",
}

# Two context turns from the "original dataset", then ten evaluated turns: the size of the
# simulated CoRE logs (3 to 5 user/system rounds after the history).
REALISTIC_LOG = {
    "log_id": "log-ocean-1",
    "dialogue_id": "redial-2031",
    "metadata": {"history_turns": 2, "user_preferences": "Family animation, ocean adventures."},
    "ground_truth_item_ids": ["m-nemo"],
    "turns": [
        {"role": "user", "text": "Hello! Do you know of any family friendly movies?"},
        {
            "role": "system",
            "text": "Good morning! Have you seen The Sixth Sense (1999)? It is a classic.",
        },
        {
            "role": "user",
            "text": "Yes, but it is far too scary for my children. We loved Peter Rabbit "
            "(2018), something cute and funny like that would be perfect for a family night.",
        },
        {
            "role": "system",
            "text": "Sorry about that! For a cute family night you could try Sing (2016), a "
            "musical comedy with animals, or Moana (2016), an ocean adventure with great songs. "
            "Do your children prefer music or adventure?",
            "recommended_item_ids": ["m-sing", "m-moana", "m-getout"],
        },
        {
            "role": "user",
            "text": "Adventure for sure. I am looking for a heartfelt journey through the ocean "
            "with memorable characters, something with beautiful underwater scenes and a lot of "
            "emotion between family members. Could you suggest something along those lines?",
        },
        {
            "role": "system",
            "text": "Then Finding Dory (2016) is a lovely choice: a forgetful blue tang searches "
            "the ocean for her parents, with funny friends and gorgeous reef scenes. Luca (2021) "
            "is another warm story about two sea monsters spending a summer on the Italian "
            "coast. Have you already seen either of them?",
            "recommended_item_ids": ["m-dory", "m-luca", "m-sharktale"],
        },
        {
            "role": "user",
            "text": "We have seen Finding Dory already and the kids adored it. Luca was fine but "
            "it happens mostly on land. Is there an older film about a young fish and his "
            "father? I remember something like that from when I was younger.",
        },
        {
            "role": "system",
            "text": "You might enjoy Ponyo (2008) by Hayao Miyazaki, about a goldfish princess "
            "who wants to become human, or Song of the Sea (2014), an Irish tale about a girl "
            "who is a selkie. Both are beautifully animated and full of family feeling.",
            "recommended_item_ids": ["m-ponyo", "m-songsea", "m-wolfwalkers"],
        },
        {
            "role": "user",
            "text": "Those sound lovely but not quite it. The one I mean is about a clownfish "
            "father who crosses the whole ocean to find his son after divers take him away.",
        },
        {
            "role": "system",
            "text": "That is Finding Nemo (2003)! Marlin, an overprotective clownfish, crosses "
            "the ocean with the forgetful Dory to rescue his son Nemo from a dentist's aquarium "
            "in Sydney. It is funny and moving, and a perfect match for your family night.",
            "recommended_item_ids": ["m-nemo", "m-littlemermaid", "m-seabeast"],
        },
        {
            "role": "user",
            "text": "Yes, that is exactly the one! Thank you so much, we will watch it tonight.",
        },
        {
            "role": "system",
            "text": "Wonderful, enjoy the movie night! If the kids want more ocean stories "
            "afterwards, The Sea Beast (2022) is a great next adventure.",
            "recommended_item_ids": ["m-seabeast"],
        },
    ],
}


SHORT_LOG = {
    "log_id": "log-short-1",
    "metadata": {"history_turns": 1},
    "ground_truth_item_ids": ["m-nemo", "m-ponyo"],
    "turns": [
        {"role": "user", "text": "Hi there, any ideas for a movie?"},
        {"role": "user", "text": "Something with fish please."},
        {
            "role": "system",
            "text": "Try Shark Tale (2004) or Finding Nemo (2003).",
            "recommended_item_ids": ["m-sharktale", "m-nemo"],
        },
        {"role": "user", "text": "Another one?"},
        {
            "role": "system",
            "text": "Ponyo (2008) is lovely.",
            "recommended_item_ids": ["m-ponyo", "m-nemo"],
        },
    ],
}
